#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# engine_nixl_uring: engine_nixl's checks with NIXL's POSIX plugin in
# io_uring mode: every put and get is an IORING_OP_WRITE / IORING_OP_READ
# on an O_RDWR|O_CREAT|O_DIRECT descriptor, 32 in flight, each completion's
# result checked to be the whole request. Skips (77, saying so) when the
# tool was built without liburing (liburing-dev from Debian).
ENGINE_NIXL_MODE=-u exec bash "$(dirname "$0")/engine_nixl.sh"
