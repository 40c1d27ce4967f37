/**
 * The largest declared body of a refused request (413) that a server still reads, and drops, so that the
 * client gets the answer on a connection that is not reset: 64 MiB (GitHub caps its webhook payloads at
 * 25 MB). Closing a socket with unread bytes makes the kernel reset it (RFC 9112, section 9.6, asks a
 * server to close gracefully for this reason), and a client still writing its body then sees ECONNRESET or
 * EPIPE instead of the 413, and sends again. Past this size, reading costs more than that risk: the
 * connection is closed.
 */
export const DRAIN_LIMIT_BYTES = 64 * 1_048_576;
