#ifndef SETTLE_CSQLITE_SHIM_H
#define SETTLE_CSQLITE_SHIM_H
#include <sqlite3.h>

// SQLITE_TRANSIENT is a macro casting -1 to a function pointer, which Swift cannot import.
static inline sqlite3_destructor_type settle_sqlite_transient(void) { return SQLITE_TRANSIENT; }

// SQLITE_STATIC, likewise a macro: text SQLite reads in place, valid until the parameter is unbound.
static inline sqlite3_destructor_type settle_sqlite_static(void) { return SQLITE_STATIC; }

// sqlite3_config is variadic, which Swift cannot call. SQLITE_CONFIG_MEMSTATUS off: SQLite stops
// counting its allocations, which took a global mutex around every malloc and free
// (https://www.sqlite.org/c3ref/c_config_covering_index_scan.html#sqliteconfigmemstatus).
// Only before SQLite initializes (the first connection); SQLITE_MISUSE after, changing nothing.
static inline int settle_sqlite_config_memstatus_off(void) { return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }

#endif
