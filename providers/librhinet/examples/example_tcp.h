/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The TCP side channel of the examples: two processes exchange their
 * addresses and keep in step over one connection (the direct verbs need
 * no connection setup; the examples only need to know each other), and
 * the byte pattern their messages carry.
 */
#ifndef RHINETDV_EXAMPLE_TCP_H
#define RHINETDV_EXAMPLE_TCP_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* All of @len bytes to (@out) or from @fd; 0, or -1 when the peer left. */
static inline int example_full_io(int fd, void *p, size_t len, bool out)
{
	uint8_t *b = p;

	while (len) {
		ssize_t n = out ? write(fd, b, len) : read(fd, b, len);

		if (n <= 0)
			return -1;
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * With @server: connects to it, trying for @wait_s seconds (the server
 * may still be starting); without: listens on @port and takes one
 * connection. Reads time out after 120 s. The socket, or -1.
 */
static inline int example_tcp_open(const char *server, int port, int wait_s)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port)};
	struct timeval tv = {120, 0};
	int fd = -1, one = 1;

	if (server) {
		if (inet_pton(AF_INET, server, &a.sin_addr) != 1) {
			fprintf(stderr, "bad address %s\n", server);
			return -1;
		}
		for (int i = 0; i < wait_s * 4 && fd < 0; i++) {
			fd = socket(AF_INET, SOCK_STREAM, 0);
			if (fd < 0)
				return -1;
			if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
				close(fd);
				fd = -1;
				usleep(250000);
			}
		}
		if (fd < 0) {
			/* (verbs.lib.sh retries on these words) */
			fprintf(stderr, "Couldn't connect to %s:%d\n", server,
				port);
			return -1;
		}
	} else {
		int l = socket(AF_INET, SOCK_STREAM, 0);

		if (l < 0)
			return -1;
		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		a.sin_addr.s_addr = htonl(INADDR_ANY);
		if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1)) {
			perror("bind/listen");
			close(l);
			return -1;
		}
		fd = accept(l, NULL, NULL);
		close(l);
		if (fd < 0)
			return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Both sides reach step @s before either goes on: 0, or -1 when the peer
 * left or is at another step (*@peer_step says where).
 */
static inline int example_step(int fd, uint32_t s, uint32_t *peer_step)
{
	*peer_step = 0;
	if (example_full_io(fd, &s, sizeof(s), true) ||
	    example_full_io(fd, peer_step, sizeof(*peer_step), false))
		return -1;
	return *peer_step == s ? 0 : -1;
}

/* Message bytes both sides can tell apart: byte @i of message @seed. */
static inline uint8_t example_pattern(uint32_t seed, uint64_t i)
{
	return (uint8_t)(seed * 151u + i * 11u + (i >> 10) * 7u + 3u);
}

static inline void example_fill(uint8_t *p, uint32_t seed, size_t len)
{
	for (size_t i = 0; i < len; i++)
		p[i] = example_pattern(seed, i);
}

static inline bool example_same(const uint8_t *p, uint32_t seed, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != example_pattern(seed, i))
			return false;
	return true;
}

#endif /* RHINETDV_EXAMPLE_TCP_H */
