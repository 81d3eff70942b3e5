/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests/fuzz/fuzz.h: what the fuzz harnesses (proto_fuzz.c, server_fuzz.c),
 * their replay driver (replay.c) and the seed generator (gen_corpus.c) agree
 * on: the libFuzzer entry point and the input format of server_fuzz.
 *
 *   input  := setup[FUZZ_SETUP_BYTES] { sel frame }*
 *   setup  := flags (FUZZ_F_*), pool (4 KiB blocks of pool data:
 *             FUZZ_POOL_MIN_BLOCKS + 4 * pool, so 16 KiB to 4 MiB), two
 *             bytes unused
 *   sel    := bits 0-1: connection 0..3 (made on first use, and anew after
 *             it closed); FUZZ_SEL_DROP: the client drops it after this frame
 *   frame  := proto_hdr, then hdr.len payload bytes, exactly as on the wire
 *             (cut short by the end of the input: the client then hangs up)
 *
 * Frames carry FUZZ_GENERATION, the generation the harness's marud runs
 * with. Two things a client learns only from replies are filled in by the
 * harness, or the fuzzer could never get past them: a HELLO with
 * HELLO_F_RECLAIM whose token is {k, 0, ...} (k > 0) gets the (k-1)-th
 * token handed out so far (modulo their count), and an AUTH whose mac is
 * all zero, sent after marud's AUTH reply on that connection, gets the HMAC
 * a client holding the key (FUZZ_KEY_BYTE x 32) would send (with
 * FUZZ_F_TENANT, the administrator's or the tenant's: see below).
 */
#ifndef MARU_FUZZ_H
#define MARU_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#define FUZZ_GENERATION		7ULL
#define FUZZ_MAX_FRAME		(64U << 10)	/* marud's max_frame: bounds every reply */
#define FUZZ_MAX_INPUT		(128U << 10)	/* larger inputs are ignored */
#define FUZZ_KEY_BYTE		0x5a

#define FUZZ_SETUP_BYTES	4
#define FUZZ_F_EVICT_NONE	0x01	/* eviction none: ENOSPC instead */
#define FUZZ_F_KEY		0x02	/* marud has a key: AUTH first */
#define FUZZ_F_FEW_LEASES	0x04	/* max_leases 4 per session */
#define FUZZ_F_LITTLE_PENDING	0x08	/* max_pending 32 KiB per session */
/*
 * With FUZZ_F_KEY: marud reads a key file (FUZZ_KEYS_*): the administrator
 * key is then the hash of FUZZ_ADMIN_SECRET, and tenant FUZZ_TENANT (root
 * FUZZ_TENANT_ROOT, rw, or ro with FUZZ_F_TENANT_RO) can be proved: an
 * AUTH of 128 bytes (proto_auth_named) with an all-zero mac, after marud's
 * AUTH reply, gets the HMAC of that tenant's key (hash of its secret).
 */
#define FUZZ_F_TENANT		0x10
#define FUZZ_F_TENANT_RO	0x20
#define FUZZ_ADMIN_SECRET	"fuzz-admin-secret-0123456789"
#define FUZZ_TENANT		"t"
#define FUZZ_TENANT_ROOT	"/t"
#define FUZZ_TENANT_SECRET	"fuzz-tenant-secret-0123456789"
#define FUZZ_POOL_MIN_BLOCKS	4

#define FUZZ_CONNS		4
#define FUZZ_SEL_CONN		0x03
#define FUZZ_SEL_DROP		0x80

/* libFuzzer's entry point; replay.c calls it on stored inputs. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
