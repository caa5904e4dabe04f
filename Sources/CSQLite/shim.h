#ifndef SETTLE_CSQLITE_SHIM_H
#define SETTLE_CSQLITE_SHIM_H
#include <sqlite3.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>

// SQLITE_TRANSIENT is a macro casting -1 to a function pointer, which Swift cannot import.
static inline sqlite3_destructor_type settle_sqlite_transient(void) { return SQLITE_TRANSIENT; }

// SQLITE_STATIC, likewise a macro: text SQLite reads in place, valid until the parameter is unbound.
static inline sqlite3_destructor_type settle_sqlite_static(void) { return SQLITE_STATIC; }

// sqlite3_config is variadic, which Swift cannot call. SQLITE_CONFIG_MEMSTATUS off: SQLite stops
// counting its allocations, which took a global mutex around every malloc and free
// (https://www.sqlite.org/c3ref/c_config_covering_index_scan.html#sqliteconfigmemstatus).
// Only before SQLite initializes (the first connection); SQLITE_MISUSE after, changing nothing.
static inline int settle_sqlite_config_memstatus_off(void) { return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }

// SQLite's allocator, glibc's with a pool for one size (SQLITE_CONFIG_MALLOC; installed by
// SQLiteDatabase before SQLite initializes). A write statement inside a transaction journals the
// pages it changes in memory in pieces of 1,024 bytes (temp_store = MEMORY), a malloc and a free
// each, about 130 an order: more than glibc's per-thread cache holds (seven a size), so each went
// through the arena's bins. Freed pieces wait here for the next journal instead.
//
// Every block is glibc's: a request of 1,017 to 1,032 bytes gets a block whose usable size is 1,032
// (x86_64 and aarch64 glibc round a request plus 8 up to 16), or up to 31 bytes more when glibc
// hands out a free chunk whole rather than leave a sliver. Any block of usable size 1,032 to 1,063,
// from malloc or realloc, can serve any such request, and only those are pooled; every other block
// goes back to free. At most 512 blocks wait (about 520 KiB); one mutex guards them.
// The state lives in a function-local static: a static of this header would have no definition in
// a Swift module. Whether the linker makes one pool of it or one for each module that calls these
// functions, every block in a pool is glibc's. `settle_pool_take` and `settle_pool_give` work on
// any pool (tests use one of their own).
enum { settle_pool_usable = 1032, settle_pool_least = 1017, settle_pool_capacity = 512 };
typedef struct { pthread_mutex_t lock; int count; void *blocks[settle_pool_capacity]; } settle_pool_t;
static inline settle_pool_t *settle_pool(void) {
    static settle_pool_t pool = { PTHREAD_MUTEX_INITIALIZER, 0, { 0 } };
    return &pool;
}

static inline void *settle_pool_take(settle_pool_t *pool, int n) {
    if (n >= settle_pool_least && n <= settle_pool_usable) {
        void *block = 0;
        pthread_mutex_lock(&pool->lock);
        if (pool->count > 0) block = pool->blocks[--pool->count];
        pthread_mutex_unlock(&pool->lock);
        return block ? block : malloc(settle_pool_usable);
    }
    return malloc(n);
}
static inline void settle_pool_give(settle_pool_t *pool, void *block) {
    size_t usable = block ? malloc_usable_size(block) : 0;
    if (usable >= settle_pool_usable && usable < settle_pool_usable + 32) {
        pthread_mutex_lock(&pool->lock);
        int kept = pool->count < settle_pool_capacity;
        if (kept) pool->blocks[pool->count++] = block;
        pthread_mutex_unlock(&pool->lock);
        if (kept) return;
    }
    free(block);
}
static inline int settle_pool_waiting(settle_pool_t *pool) {
    pthread_mutex_lock(&pool->lock);
    int count = pool->count;
    pthread_mutex_unlock(&pool->lock);
    return count;
}
static inline void *settle_pool_malloc(int n) { return settle_pool_take(settle_pool(), n); }
static inline void settle_pool_free(void *block) { settle_pool_give(settle_pool(), block); }
static inline void *settle_pool_realloc(void *block, int n) { return realloc(block, n); }
// At least the size asked for, as SQLite requires of xSize.
static inline int settle_pool_size(void *block) { return block ? (int)malloc_usable_size(block) : 0; }
// SQLite's own default: a multiple of 8.
static inline int settle_pool_roundup(int n) { return (n + 7) & ~7; }
static inline int settle_pool_init(void *unused) { (void)unused; return SQLITE_OK; }
static inline void settle_pool_shutdown(void *unused) { (void)unused; }
// Only before SQLite initializes, as SQLITE_CONFIG_MEMSTATUS; SQLITE_MISUSE after, changing nothing.
static inline int settle_sqlite_config_pooled_malloc(void) {
    static const sqlite3_mem_methods methods = {
        settle_pool_malloc, settle_pool_free, settle_pool_realloc, settle_pool_size,
        settle_pool_roundup, settle_pool_init, settle_pool_shutdown, 0
    };
    return sqlite3_config(SQLITE_CONFIG_MALLOC, &methods);
}

#endif
