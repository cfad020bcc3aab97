"""Pre-flight for multi-node launches: can every node reach the rendezvous host and port? Run once per node
(``srun --ntasks-per-node=1``) before ``accelerate launch``; ``scripts/slurm_train.sh`` does.

    python scripts/rendezvous_check.py HOST PORT --rank R --world W [--timeout S]

Rank 0 must run on HOST: it listens on PORT (which also proves the port is free there) until the other W - 1 ranks
have connected. The others resolve HOST and connect, retrying until the timeout. Any failure prints one line naming
the node, the address and the fix, and exits 1, instead of the launcher hanging in its rendezvous.
"""

import argparse
import socket
import sys
import time

FIX = "set MASTER_ADDR to an address of the first node that every node can reach, or MASTER_PORT to a free port"


def fail(message: str) -> None:
    print(f"rendezvous_check on {socket.gethostname()}: {message}; {FIX}.", file=sys.stderr, flush=True)
    sys.exit(1)


def host_listen(port: int, peers: int, deadline: float) -> None:
    """Accept ``peers`` connections; each peer closes first, so no TIME_WAIT is left on the port here."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        server.bind(("", port))
    except OSError as error:
        fail(f"cannot listen on port {port} ({error.strerror})")
    server.listen(peers)
    for _ in range(peers):
        server.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            connection, _ = server.accept()
        except TimeoutError:
            fail(f"not every node connected to port {port} before the timeout")
        connection.settimeout(max(0.1, deadline - time.monotonic()))
        connection.recv(1)  # returns b"" when the peer closes
        connection.close()
    server.close()


def resolve(host: str, port: int) -> tuple:
    try:
        return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][4]
    except socket.gaierror as error:
        fail(f"rendezvous host {host!r} does not resolve ({error.strerror})")


def peer_connect(host: str, address: tuple, port: int, deadline: float) -> None:
    """Connect, retrying while rank 0 may not be listening yet."""
    while True:
        try:
            with socket.create_connection(address[:2], timeout=2):
                return
        except OSError as error:
            if time.monotonic() > deadline:
                fail(f"cannot connect to {host}:{port} ({address[0]}): {error}")
            time.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("--rank", type=int, required=True)
    parser.add_argument("--world", type=int, required=True)
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    deadline = time.monotonic() + args.timeout
    address = resolve(args.host, args.port)  # on every node, rank 0 included: the launcher resolves it everywhere
    if args.rank == 0:
        host_listen(args.port, args.world - 1, deadline)
    else:
        peer_connect(args.host, address, args.port, deadline)


if __name__ == "__main__":
    main()
