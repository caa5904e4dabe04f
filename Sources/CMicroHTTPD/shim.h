#ifndef SETTLE_CMICROHTTPD_SHIM_H
#define SETTLE_CMICROHTTPD_SHIM_H
#include <stdint.h>
#include <sys/socket.h>
#include <microhttpd.h>

// MHD_start_daemon is variadic, which Swift can't call: the options settle uses, in one typed call.
// A listen_fd >= 0 (systemd socket activation) is used instead of binding address.
static inline struct MHD_Daemon *settle_mhd_start(unsigned int flags, const struct sockaddr *address, int listen_fd,
                                                  MHD_AccessHandlerCallback handler, void *handler_cls,
                                                  MHD_RequestCompletedCallback completed,
                                                  unsigned int connection_limit, unsigned int per_ip_limit,
                                                  unsigned int timeout_seconds, size_t memory_limit, unsigned int threads) {
    if (listen_fd >= 0) {
        return MHD_start_daemon(flags, 0, NULL, NULL, handler, handler_cls,
                                MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_fd,
                                MHD_OPTION_NOTIFY_COMPLETED, completed, handler_cls,
                                MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                                MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip_limit,
                                MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
                                MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit,
                                MHD_OPTION_THREAD_POOL_SIZE, threads,
                                MHD_OPTION_END);
    }
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_SOCK_ADDR, address,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, handler_cls,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit,
                            MHD_OPTION_THREAD_POOL_SIZE, threads,
                            MHD_OPTION_END);
}

// MHD_get_daemon_info is variadic: the port actually bound (for port 0 in tests).
static inline uint16_t settle_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

#endif
