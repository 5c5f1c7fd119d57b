#!/usr/bin/env python3
"""A stand-in for `torchrun --standalone --nproc-per-node N CMD...` (no
PyTorch needed): starts N processes with the variables torchrun gives its
workers, holds MASTER_PORT as torchrun's own store does, and, as torchrun's
agent does, stops the other workers when one fails (unless --no-kill).
Exit status: 0 when every worker exits 0, else 1 (torchrun's
ChildFailedError), after one line per failed worker on stderr; 124 when
--timeout passes first (every worker is killed).
"""

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
import uuid


def free_ports():
    """A port P with P, P + 1 and P + 2 free; a socket bound to P (the
    store torchrun serves there)."""
    for _ in range(200):
        store = socket.socket()
        store.bind(("127.0.0.1", 0))
        port = store.getsockname()[1]
        ok = port + 2 <= 65535
        for extra in (1, 2):
            if not ok:
                break
            probe = socket.socket()
            try:
                probe.bind(("127.0.0.1", port + extra))
            except OSError:
                ok = False
            finally:
                probe.close()
        if ok:
            store.listen(16)
            return port, store
        store.close()
    sys.exit("torchrun stand-in: no three free ports in a row")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--nproc-per-node", type=int, required=True)
    parser.add_argument("--no-kill", action="store_true")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    n = args.nproc_per_node
    port, store = free_ports()
    base = dict(os.environ)
    base.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        WORLD_SIZE=str(n),
        LOCAL_WORLD_SIZE=str(n),
        GROUP_RANK="0",
        GROUP_WORLD_SIZE="1",
        ROLE_NAME="default",
        ROLE_WORLD_SIZE=str(n),
        TORCHELASTIC_RUN_ID=uuid.uuid4().hex,
        TORCHELASTIC_RESTART_COUNT="0",
        TORCHELASTIC_MAX_RESTARTS="0",
        TORCHELASTIC_USE_AGENT_STORE="False",
        OMP_NUM_THREADS="1",
    )
    workers = []
    for rank in range(n):
        env = dict(base, RANK=str(rank), LOCAL_RANK=str(rank),
                   ROLE_RANK=str(rank), GROUP_RANK="0")
        workers.append(subprocess.Popen(args.command, env=env))
    deadline = time.monotonic() + args.timeout
    codes = [None] * n
    killed = False
    while any(code is None for code in codes):
        for rank, worker in enumerate(workers):
            if codes[rank] is None:
                codes[rank] = worker.poll()
        failed = any(code not in (None, 0) for code in codes)
        if failed and not args.no_kill and not killed:
            killed = True
            for worker in workers:
                if worker.poll() is None:
                    worker.send_signal(signal.SIGTERM)
        if time.monotonic() > deadline:
            for worker in workers:
                if worker.poll() is None:
                    worker.kill()
            print("torchrun stand-in: timed out after %g s" % args.timeout,
                  file=sys.stderr)
            return 124
        time.sleep(0.05)
    store.close()
    failures = [(rank, code) for rank, code in enumerate(codes) if code != 0]
    for rank, code in failures:
        print("torchrun stand-in: rank %d exited with %d" % (rank, code),
              file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
