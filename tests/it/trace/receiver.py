"""An OTLP/HTTP receiver for retry's tests, on 127.0.0.1.

Each POST (protobuf, or OTLP/JSON: its hex ids turned into the base64 that
protobuf's JSON mapping reads) is decoded with the official
opentelemetry-proto package and
written to OUT as one JSON line per span (ids in hex, attributes as plain
values, the request's path and headers beside). A GET is an HTTP probe's
request: its headers are written as a line of their own, and it is answered
503 for the first FAIL requests, 200 after. The port is written to
PORT_FILE once listening. With DELAY, every export is answered that many
seconds late. With RECEIVER_TLS_CERT and RECEIVER_TLS_KEY in the
environment (PEM files), it speaks HTTPS only.

usage: receiver.py OUT PORT_FILE [DELAY] [FAIL]
"""

import base64
import json
import os
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

OUT, PORT_FILE = sys.argv[1], sys.argv[2]
DELAY = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
FAIL = [int(sys.argv[4]) if len(sys.argv) > 4 else 0]
LOCK = threading.Lock()


def value(v):
    which = v.WhichOneof("value")
    if which == "array_value":
        return [value(x) for x in v.array_value.values]
    return getattr(v, which) if which else None


def write(record):
    with LOCK, open(OUT, "a") as f:
        f.write(json.dumps(record) + "\n")


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        received = time.time()
        if DELAY:
            time.sleep(DELAY)
        request = ExportTraceServiceRequest()
        if self.headers.get("content-type") == "application/json":
            doc = json.loads(body)
            for rs in doc.get("resourceSpans", []):
                for ss in rs.get("scopeSpans", []):
                    for s in ss.get("spans", []):
                        for key in ("traceId", "spanId", "parentSpanId"):
                            s[key] = base64.b64encode(bytes.fromhex(s.get(key, ""))).decode()
            json_format.ParseDict(doc, request)
        else:
            request.ParseFromString(body)
        headers = {k.lower(): v for k, v in self.headers.items()}
        for rs in request.resource_spans:
            resource = {kv.key: value(kv.value) for kv in rs.resource.attributes}
            for ss in rs.scope_spans:
                for s in ss.spans:
                    write({
                        "span": s.name,
                        "trace_id": s.trace_id.hex(),
                        "span_id": s.span_id.hex(),
                        "parent": s.parent_span_id.hex(),
                        "trace_state": s.trace_state,
                        "flags": s.flags,
                        "kind": s.kind,
                        "start": s.start_time_unix_nano,
                        "end": s.end_time_unix_nano,
                        "attrs": {kv.key: value(kv.value) for kv in s.attributes},
                        "events": [
                            {"name": e.name, "time": e.time_unix_nano,
                             "attrs": {kv.key: value(kv.value) for kv in e.attributes}}
                            for e in s.events
                        ],
                        "status": {"code": s.status.code, "message": s.status.message},
                        "scope": ss.scope.name,
                        "resource": resource,
                        "path": self.path,
                        "headers": headers,
                        "received": received,
                    })
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def do_GET(self):
        write({"probe": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}})
        with LOCK:
            failing = FAIL[0] > 0
            FAIL[0] -= 1
        self.send_response(503 if failing else 200)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
if os.environ.get("RECEIVER_TLS_CERT"):
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(os.environ["RECEIVER_TLS_CERT"], os.environ["RECEIVER_TLS_KEY"])
    server.socket = tls.wrap_socket(server.socket, server_side=True)
with open(PORT_FILE + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(PORT_FILE + ".tmp", PORT_FILE)
server.serve_forever()
