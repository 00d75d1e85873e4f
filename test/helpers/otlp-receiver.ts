// A real OTLP/gRPC receiver for tests: @grpc/grpc-js serving the collector's MetricsService and TraceService
// with the OTLP protobuf definitions (compiled from opentelemetry-proto, as shipped in an
// @opentelemetry/otlp-transformer release). It keeps every export request it is sent, decoded.
import { Server, ServerCredentials, type ServiceDefinition, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const root = require('otlp-proto-defs/build/src/generated/root.js') as any;
const collector = root.opentelemetry.proto.collector;

/** An OTLP AnyValue/KeyValue list as a plain object. */
export type Attributes = Record<string, string | number | boolean>;

export interface ReceivedMetric {
  name: string;
  unit: string;
  kind: 'sum' | 'gauge' | 'histogram' | 'other';
  points: { attributes: Attributes; value: number; count?: number }[];
  resource: Attributes;
}

export interface ReceivedSpan {
  name: string;
  kind: number;
  attributes: Attributes;
  startNs: bigint;
  endNs: bigint;
  resource: Attributes;
}

interface KeyValue {
  key: string;
  value?: { stringValue?: string | null; intValue?: unknown; doubleValue?: number | null; boolValue?: boolean | null };
}

function attributes(list: KeyValue[] | undefined | null): Attributes {
  const out: Attributes = {};
  for (const kv of list ?? []) {
    const v = kv.value ?? {};
    if (v.stringValue != null) out[kv.key] = v.stringValue;
    else if (v.intValue != null) out[kv.key] = Number(String(v.intValue));
    else if (v.doubleValue != null) out[kv.key] = v.doubleValue;
    else if (v.boolValue != null) out[kv.key] = v.boolValue;
  }
  return out;
}

const num = (v: unknown) => (v == null ? 0 : Number(String(v)));

function unary(path: string, Req: { decode(b: Uint8Array): unknown }, Res: { encode(m: unknown): { finish(): Uint8Array }; create(m: unknown): unknown }) {
  return {
    path,
    requestStream: false,
    responseStream: false,
    requestSerialize: () => Buffer.alloc(0),
    requestDeserialize: (b: Buffer) => Req.decode(b),
    responseSerialize: (m: unknown) => Buffer.from(Res.encode(Res.create(m)).finish()),
    responseDeserialize: () => ({}),
  };
}

export interface OtlpReceiver {
  port: number;
  metrics: ReceivedMetric[];
  spans: ReceivedSpan[];
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const metrics: ReceivedMetric[] = [];
  const spans: ReceivedSpan[] = [];
  const server = new Server();
  const m = collector.metrics.v1;
  const t = collector.trace.v1;
  server.addService(
    { Export: unary('/opentelemetry.proto.collector.metrics.v1.MetricsService/Export', m.ExportMetricsServiceRequest, m.ExportMetricsServiceResponse) } as unknown as ServiceDefinition,
    {
      Export: (call: { request: any }, cb: (err: null, res: object) => void) => {
        for (const rm of call.request.resourceMetrics ?? []) {
          const resource = attributes(rm.resource?.attributes);
          for (const sm of rm.scopeMetrics ?? []) {
            for (const metric of sm.metrics ?? []) {
              const kind = metric.sum ? 'sum' : metric.gauge ? 'gauge' : metric.histogram ? 'histogram' : 'other';
              const raw = metric.sum?.dataPoints ?? metric.gauge?.dataPoints ?? metric.histogram?.dataPoints ?? [];
              const points = raw.map((p: any) => ({
                attributes: attributes(p.attributes),
                value: kind === 'histogram' ? Number(p.sum ?? 0) : p.asDouble != null && p.asDouble !== 0 ? p.asDouble : num(p.asInt),
                count: kind === 'histogram' ? num(p.count) : undefined,
              }));
              metrics.push({ name: metric.name, unit: metric.unit ?? '', kind, points, resource });
            }
          }
        }
        cb(null, {});
      },
    } as UntypedServiceImplementation,
  );
  server.addService(
    { Export: unary('/opentelemetry.proto.collector.trace.v1.TraceService/Export', t.ExportTraceServiceRequest, t.ExportTraceServiceResponse) } as unknown as ServiceDefinition,
    {
      Export: (call: { request: any }, cb: (err: null, res: object) => void) => {
        for (const rs of call.request.resourceSpans ?? []) {
          const resource = attributes(rs.resource?.attributes);
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              spans.push({ name: s.name, kind: s.kind, attributes: attributes(s.attributes), startNs: BigInt(String(s.startTimeUnixNano)), endNs: BigInt(String(s.endTimeUnixNano)), resource });
            }
          }
        }
        cb(null, {});
      },
    } as UntypedServiceImplementation,
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return {
    port,
    metrics,
    spans,
    close: () => new Promise((resolve) => server.tryShutdown(() => resolve())),
  };
}
