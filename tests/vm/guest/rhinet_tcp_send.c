// SPDX-License-Identifier: BSD-2-Clause
/*
 * rhinet-tcp-send HOST PORT: copies standard input to a TCP connection to
 * HOST:PORT, closes its sending side and waits until the peer closes.
 * rhinet-tcp-send -l PORT: accepts one connection on PORT and copies it to
 * standard output until the peer closes its sending side.
 * Plain POSIX sockets, dynamically linked, so that librdmacm's rsockets
 * preload library can carry it (rdma_apps.sh): the OpenBSD netcat asks for
 * SOCK_STREAM | SOCK_NONBLOCK, which rsockets refuses and the preload then
 * hands to the kernel's TCP; socat's client crashes under it and socat's
 * server never sees the data arrive.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int send_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n <= 0) {
			perror("rhinet-tcp-send: write");
			return -1;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static int receive(const char *port)
{
	struct sockaddr_in addr = {.sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_ANY)};
	static char buf[65536];
	int lfd, fd, one = 1;
	ssize_t n;

	addr.sin_port = htons((unsigned short)atoi(port));
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) ||
	    listen(lfd, 1)) {
		perror("rhinet-tcp-send: listen");
		return 1;
	}
	fd = accept(lfd, NULL, NULL);
	if (fd < 0) {
		perror("rhinet-tcp-send: accept");
		return 1;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (send_all(1, buf, (size_t)n))
			return 1;
	if (n < 0) {
		perror("rhinet-tcp-send: read from the peer");
		return 1;
	}
	close(fd);
	close(lfd);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr = {.sin_family = AF_INET};
	static char buf[65536];
	unsigned long long total = 0;
	ssize_t n;
	int fd;

	if (argc == 3 && !strcmp(argv[1], "-l"))
		return receive(argv[2]);
	if (argc != 3 || inet_pton(AF_INET, argv[1], &addr.sin_addr) != 1) {
		fprintf(stderr,
			"usage: rhinet-tcp-send IPV4-ADDRESS PORT <FILE\n"
			"       rhinet-tcp-send -l PORT >FILE\n");
		return 2;
	}
	addr.sin_port = htons((unsigned short)atoi(argv[2]));
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0) {
		perror("rhinet-tcp-send: socket");
		return 1;
	}
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		perror("rhinet-tcp-send: connect");
		return 1;
	}
	while ((n = read(0, buf, sizeof(buf))) > 0) {
		if (send_all(fd, buf, (size_t)n))
			return 1;
		total += (unsigned long long)n;
	}
	if (n < 0) {
		perror("rhinet-tcp-send: read");
		return 1;
	}
	if (shutdown(fd, SHUT_WR)) {
		perror("rhinet-tcp-send: shutdown");
		return 1;
	}
	/* The peer closes once it has everything: then the bytes are there. */
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	if (n < 0) {
		perror("rhinet-tcp-send: read from the peer");
		return 1;
	}
	close(fd);
	printf("rhinet-tcp-send: %llu bytes sent\n", total);
	return 0;
}
