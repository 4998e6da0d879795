"""A gRPC server for the tests of --grpc, on 127.0.0.1, with the official
health service from PyPI's grpcio-health-checking.

Writes the port it listens on to PORT_FILE once it serves. Options:
  --tls CERT KEY          serve TLS with this certificate and key
  --no-health             serve no health service at all (UNIMPLEMENTED)
  --not-serving-for SECS  the server as a whole is NOT_SERVING this long, then SERVING
  --service NAME          also know this service, SERVING
  --register-after SECS   ... but only from this long after the start
"""

import argparse
import threading
import time
from concurrent import futures

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

p = argparse.ArgumentParser()
p.add_argument("port_file")
p.add_argument("--tls", nargs=2)
p.add_argument("--no-health", action="store_true")
p.add_argument("--not-serving-for", type=float, default=0)
p.add_argument("--service")
p.add_argument("--register-after", type=float, default=0)
a = p.parse_args()

server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
if not a.no_health:
    servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    S = health_pb2.HealthCheckResponse
    servicer.set("", S.NOT_SERVING if a.not_serving_for else S.SERVING)

    def later():
        start = time.monotonic()
        for delay, what in sorted(
            [(a.not_serving_for, ""), (a.register_after, a.service)],
            key=lambda x: x[0],
        ):
            if what is None:
                continue
            time.sleep(max(0, delay - (time.monotonic() - start)))
            servicer.set(what, S.SERVING)

    threading.Thread(target=later, daemon=True).start()

if a.tls:
    cert, key = (open(f, "rb").read() for f in a.tls)
    creds = grpc.ssl_server_credentials([(key, cert)])
    port = server.add_secure_port("127.0.0.1:0", creds)
else:
    port = server.add_insecure_port("127.0.0.1:0")
server.start()
with open(a.port_file + ".tmp", "w") as f:
    f.write(str(port))
import os

os.rename(a.port_file + ".tmp", a.port_file)
server.wait_for_termination(timeout=60)
