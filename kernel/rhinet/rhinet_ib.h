/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * RHiNET-NG RDMA NIC driver, the entry points (the top layer): the PCI
 * driver, the Ethernet interface, the ib_core device with its event
 * handlers, and the kernel verbs' data path. They use the objects
 * (rhinet_obj.h) and the hardware (rhinet_hw.h); nothing below calls them
 * by name: the hardware reaches them through the consumer ops they set
 * (rhinet_consumer_set). See Documentation/driver/README.md (Layers).
 */
#ifndef RHINET_IB_H
#define RHINET_IB_H

#include "rhinet_obj.h"

/* rhinet_selftest.c: `ethtool -t` on the interface. */
struct rhinet_self_test_probe {
	spinlock_t lock; /* the fields below */
	struct completion done;
	u16 node;
	bool waiting;
	u64 outcome; /* the PROBE_DONE's syndrome */
};

struct ethtool_test;
int rhinet_self_test_count(void);
void rhinet_self_test_strings(u8 *data);
void rhinet_self_test(struct rhinet_dev *rdev,
		      struct rhinet_self_test_probe *probe,
		      struct ethtool_test *et, u64 *data);
void rhinet_self_test_probe_done(struct rhinet_self_test_probe *probe,
				 const struct rhn_eqe *eqe);

/* rhinet_netdev.c */
int rhinet_net_init(struct rhinet_dev *rdev);
void rhinet_net_fini(struct rhinet_dev *rdev);
struct net_device *rhinet_net_device(struct rhinet_dev *rdev);

/* rhinet_ib.c */
int rhinet_ib_init(struct rhinet_dev *rdev);
void rhinet_ib_fini(struct rhinet_dev *rdev);

/* rhinet_events.c */
void rhinet_ib_event(struct rhinet_dev *rdev, const struct rhn_eqe *eqe);
void rhinet_ib_dead(struct rhinet_dev *rdev);

/* rhinet_kverbs.c */
int rhinet_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		     const struct ib_send_wr **bad_wr);
int rhinet_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		     const struct ib_recv_wr **bad_wr);
int rhinet_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc);
int rhinet_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
int rhinet_add_gid(const struct ib_gid_attr *attr, void **context);
int rhinet_del_gid(const struct ib_gid_attr *attr, void **context);

/* rhinet_raw.c: raw access instead of the devices above */
extern bool rhinet_raw_access;
int rhinet_raw_probe(struct pci_dev *pdev);
void rhinet_raw_remove(struct pci_dev *pdev);
void rhinet_raw_shutdown(struct pci_dev *pdev);

#endif /* RHINET_IB_H */
