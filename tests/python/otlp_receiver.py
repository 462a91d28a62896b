"""An OTLP/HTTP trace receiver for tests: decodes each POST /v1/traces body as the
`ExportTraceServiceRequest` of the official `opentelemetry-proto` definitions (protobuf) and
appends one JSON line per span to the file named by its first argument (trace and span ids in
hex, parent span id, name, kind, attributes, the resource's service.name, status code, the
request's Content-Type, Content-Encoding and Authorization). A gzip body (Content-Encoding:
gzip) is unzipped first. Spans of the service "sieve-partial" are answered with a
`partial_success` rejecting one of them (the collector keeping part of a batch). Listens
on 127.0.0.1 on a free port and prints `listening PORT` on stdout. A body that does not decode is
answered 400 with the reason (and recorded as {"error": ...}), so a test sees a bad export."""
import gzip
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

OUT = sys.argv[1]


def value(v):
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, kind) if kind else None


def attrs(kvs):
    return {kv.key: value(kv.value) for kv in kvs}


def write(record):
    with open(OUT, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.path != "/v1/traces":
            self.send_error(404, "traces are received at /v1/traces")
            return
        request = ExportTraceServiceRequest()
        try:
            if self.headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            request.ParseFromString(body)
        except (DecodeError, OSError) as e:
            write({"error": f"not an ExportTraceServiceRequest: {e}",
                   "contentType": self.headers.get("content-type")})
            self.send_error(400, f"not an ExportTraceServiceRequest: {e}")
            return
        partial = False
        for rs in request.resource_spans:
            resource = attrs(rs.resource.attributes)
            partial = partial or resource.get("service.name") == "sieve-partial"
            for ss in rs.scope_spans:
                for s in ss.spans:
                    write({
                        "service": resource.get("service.name"),
                        "contentType": self.headers.get("content-type"),
                        "contentEncoding": self.headers.get("content-encoding"),
                        "authorization": self.headers.get("authorization"),
                        "traceId": s.trace_id.hex(),
                        "spanId": s.span_id.hex(),
                        "parentSpanId": s.parent_span_id.hex(),
                        "name": s.name,
                        "kind": s.kind,
                        "attributes": attrs(s.attributes),
                        "status": s.status.code,
                        "start": s.start_time_unix_nano,
                        "end": s.end_time_unix_nano,
                    })
        answer = ExportTraceServiceResponse()
        if partial:
            answer.partial_success.CopyFrom(
                ExportTracePartialSuccess(rejected_spans=1, error_message="the test collector keeps all but one"))
        answer = answer.SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(f"listening {server.server_address[1]}", flush=True)
server.serve_forever()
