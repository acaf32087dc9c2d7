/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the XDP capture program (capture.bpf.c) and burstscope's AF_XDP backend agree on: the
 * per-CPU verdict counters, the metadata the program writes in front of each redirected frame, and
 * the map size. Included by the BPF C and by C++; types from <linux/types.h> only, so both sides
 * see the same layout.
 */
#ifndef BURSTSCOPE_BPF_CAPTURE_SHARED_H
#define BURSTSCOPE_BPF_CAPTURE_SHARED_H

#include <linux/types.h>

/* XSKMAP entries: one AF_XDP socket per RX queue, indexed by the queue the frame arrived on. */
#define BS_MAX_QUEUES 256

/* Per-CPU counters, indexed by enum bs_stat. The first four are verdicts: every frame the program
 * sees is counted in exactly one of them, so their sum is the frames seen. The rest count
 * properties of frames already counted by a verdict. */
enum bs_stat {
	BS_STAT_REDIRECTED =
	    0, /* handed to the queue's AF_XDP socket (the kernel may still drop it there) */
	BS_STAT_NO_SOCKET,     /* XDP_PASS: no socket bound on the frame's RX queue */
	BS_STAT_ABORTED,       /* XDP_ABORTED: the redirect helper failed */
	BS_STAT_FILTERED,      /* XDP_PASS: excluded by the configured filter (not IP) */
	BS_STAT_TRUNCATED,     /* redirected frames cut to the snap length (wire length kept in
				  metadata) */
	BS_STAT_NO_METADATA,   /* redirected without metadata: the driver has no room for it */
	BS_STAT_NIC_TIMESTAMP, /* metadata carries the NIC's RX timestamp */
	BS_STAT_COUNT,
};

/* Written by the program immediately before the frame (data_meta .. data), 4-byte multiple, <= 32
 * bytes. */
struct bs_xdp_meta {
	__u64 ts_ns;	/* BS_META_NIC_TS: the NIC's RX timestamp, else bpf_ktime_get_ns()
			   (CLOCK_MONOTONIC) */
	__u32 wire_len; /* the frame's length before any truncation, bytes */
	__u32 flags;	/* BS_META_MAGIC | BS_META_NIC_TS */
};

#define BS_META_MAGIC 0xb5700000u
#define BS_META_MAGIC_MASK 0xfff00000u
#define BS_META_NIC_TS 0x1u

#endif
