#!/usr/bin/env python3
"""free_port_pairs.py N: prints N free TCP ports of 127.0.0.1, space-separated, each with the
port after it free as well (a ps task's data link listens on its port + 1). Every socket stays
bound until all are chosen, so the ports differ; they are free again when this exits."""
import socket
import sys

held, ports = [], []
while len(ports) < int(sys.argv[1]):
    first, second = socket.socket(), socket.socket()
    first.bind(("127.0.0.1", 0))
    try:
        second.bind(("127.0.0.1", first.getsockname()[1] + 1))
    except OSError:
        continue
    held += [first, second]
    ports.append(first.getsockname()[1])
print(" ".join(map(str, ports)))
