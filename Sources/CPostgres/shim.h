#ifndef SETTLE_CPOSTGRES_SHIM_H
#define SETTLE_CPOSTGRES_SHIM_H
#include <libpq-fe.h>

// PG_DIAG_SQLSTATE is a character-literal macro ('C'), which Swift does not import.
static inline int settle_pg_diag_sqlstate(void) { return PG_DIAG_SQLSTATE; }
// PG_DIAG_MESSAGE_PRIMARY, likewise: the message without DETAIL, which may quote bound values.
static inline int settle_pg_diag_message_primary(void) { return PG_DIAG_MESSAGE_PRIMARY; }

#endif
