// SPDX-License-Identifier: BSD-2-Clause
/*
 * dma-bufs for the tests of ibv_reg_dmabuf_mr: vgem, a DRM driver without
 * hardware, makes a dumb buffer of plain memory and exports it as a
 * dma-buf, as an accelerator's driver would hand out its memory. Shared by
 * rhinet-dmabuf (C) and rhinet-dmabuf-user (C++, userlib).
 */
#ifndef RHINET_VGEM_H
#define RHINET_VGEM_H

#include <fcntl.h>
#include <linux/types.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/*
 * The DRM ioctls used, from the kernel's UAPI (include/uapi/drm/drm.h and
 * drm_mode.h): Debian ships those headers only with libdrm-dev.
 */
struct drm_version {
	int version_major, version_minor, version_patchlevel;
	size_t name_len;
	char *name;
	size_t date_len;
	char *date;
	size_t desc_len;
	char *desc;
};

struct drm_gem_close {
	__u32 handle, pad;
};

struct drm_prime_handle {
	__u32 handle, flags;
	__s32 fd;
};

struct drm_mode_create_dumb {
	__u32 height, width, bpp, flags;
	__u32 handle, pitch;
	__u64 size;
};

#define DRM_IOCTL_VERSION _IOWR('d', 0x00, struct drm_version)
#define DRM_IOCTL_GEM_CLOSE _IOW('d', 0x09, struct drm_gem_close)
#define DRM_IOCTL_PRIME_HANDLE_TO_FD _IOWR('d', 0x2d, struct drm_prime_handle)
#define DRM_IOCTL_MODE_CREATE_DUMB _IOWR('d', 0xb2, struct drm_mode_create_dumb)

/* Dumb buffers of 1024 pixels of 32 bits a row: 4 KiB rows. */
#define VGEM_PITCH 4096u

/* The vgem DRM device's card node, or -1. */
static inline int vgem_open(void)
{
	for (int i = 0; i < 16; i++) {
		char path[32], name[16] = "";
		struct drm_version v;
		int fd;

		memset(&v, 0, sizeof(v));
		v.name_len = sizeof(name) - 1;
		v.name = name;
		snprintf(path, sizeof(path), "/dev/dri/card%d", i);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (!ioctl(fd, DRM_IOCTL_VERSION, &v) && !strcmp(name, "vgem"))
			return fd;
		close(fd);
	}
	return -1;
}

/*
 * A dumb buffer of @rows rows on @card, exported read-write: its dma-buf
 * descriptor, with the GEM handle in @handle and the size in @size; -1
 * with errno set if a step failed.
 */
static inline int vgem_dmabuf(int card, uint32_t rows, uint32_t *handle,
			      size_t *size)
{
	struct drm_mode_create_dumb c;
	struct drm_prime_handle h;

	memset(&c, 0, sizeof(c));
	c.height = rows;
	c.width = VGEM_PITCH / 4;
	c.bpp = 32;
	if (ioctl(card, DRM_IOCTL_MODE_CREATE_DUMB, &c))
		return -1;
	memset(&h, 0, sizeof(h));
	h.handle = c.handle;
	h.flags = O_CLOEXEC | O_RDWR;
	if (ioctl(card, DRM_IOCTL_PRIME_HANDLE_TO_FD, &h))
		return -1;
	*handle = c.handle;
	*size = c.size;
	return h.fd;
}

/* Drops the GEM handle (the dma-buf lives on while referenced). */
static inline int vgem_close_handle(int card, uint32_t handle)
{
	struct drm_gem_close c;

	memset(&c, 0, sizeof(c));
	c.handle = handle;
	return ioctl(card, DRM_IOCTL_GEM_CLOSE, &c);
}

#endif
