#ifndef SETTLE_CMICROHTTPD_SHIM_H
#define SETTLE_CMICROHTTPD_SHIM_H
#include <stdint.h>
#include <sys/socket.h>
#include <microhttpd.h>

// The options settle's servers use, as one MHD_OPTION_ARRAY so that options can be left out
// (MHD_start_daemon is variadic, which Swift can't call). threads 0 leaves the thread pool out
// (thread-per-connection daemons refuse it); NULL callbacks and per_ip_limit 0 are left out too.
// A listen_fd >= 0 (systemd socket activation) is used instead of binding address.
typedef void *(*settle_mhd_uri_logger)(void *cls, const char *uri, struct MHD_Connection *connection);
static inline struct MHD_Daemon *settle_mhd_start_server(unsigned int flags, const struct sockaddr *address, int listen_fd,
                                                         MHD_AccessHandlerCallback handler, void *cls,
                                                         MHD_RequestCompletedCallback completed,
                                                         settle_mhd_uri_logger uri_logger,
                                                         MHD_NotifyConnectionCallback notify_connection,
                                                         unsigned int connection_limit, unsigned int per_ip_limit,
                                                         unsigned int timeout_seconds, size_t memory_limit,
                                                         unsigned int threads) {
    struct MHD_OptionItem options[12];
    int n = 0;
    if (listen_fd >= 0) {
        options[n++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_SOCKET, (intptr_t)listen_fd, NULL};
    } else {
        options[n++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, (void *)address};
    }
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, cls};
    if (uri_logger != NULL) options[n++] = (struct MHD_OptionItem){MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)uri_logger, cls};
    if (notify_connection != NULL) {
        options[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)notify_connection, cls};
    }
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, (intptr_t)connection_limit, NULL};
    if (per_ip_limit > 0) options[n++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT, (intptr_t)per_ip_limit, NULL};
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)timeout_seconds, NULL};
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)memory_limit, NULL};
    if (threads > 0) options[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)threads, NULL};
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, cls, MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

// MHD_get_daemon_info is variadic: the port actually bound (for port 0 in tests).
static inline uint16_t settle_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

// MHD_get_daemon_info is variadic: the listening socket, so that the address the kernel really
// bound can be read back with getsockname(2) (-1 when there is none).
static inline int settle_mhd_listen_fd(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_LISTEN_FD);
    return info == NULL ? -1 : (int)info->listen_fd;
}

// MHD_get_connection_info is variadic: the connection's socket, so that a stop that does not wait
// can shut open connections down at once.
static inline int settle_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : (int)info->connect_fd;
}

// MHD_get_connection_info is variadic: the client's address (NULL when unknown), so that the
// support console can limit failed logins per client address.
static inline const struct sockaddr *settle_mhd_client_address(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? NULL : info->client_addr;
}

#endif
