// The OpenTelemetry Node SDK, started only when an OTLP endpoint is configured. The SDK reads the
// standard variables itself: OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL
// (http/protobuf by default, http/json, grpc), OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER(_ARG),
// OTEL_RESOURCE_ATTRIBUTES, OTEL_BSP_*, OTEL_PROPAGATORS. Handoff adds only its default service
// name, and turns the SDK's metrics and logs off (metrics are Prometheus, logs are pino's).
//
// One SDK per process: hosts made in one process (tests) share it; it shuts down with the last.
import { markTracingEnabled } from './tracing.js';

type Env = Record<string, string | undefined>;

/** Whether `env` asks for traces: an OTLP endpoint set, and the SDK not disabled. */
export function tracingConfigured(env: Env): boolean {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint) return false;
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  return !(env.OTEL_TRACES_EXPORTER ?? '').split(',').some((e) => e.trim() === 'none');
}

interface Running {
  users: number;
  shutdown: () => Promise<void>;
}

let running: Promise<Running> | undefined;

/**
 * Start the SDK (once per process); the returned function stops this user's share of it. `env` must
 * be the process environment: the SDK reads the standard variables from there itself.
 */
export async function startTracing(env: Env): Promise<() => Promise<void>> {
  running ??= boot(env);
  const sdk = await running;
  sdk.users += 1;
  let stopped = false;
  return async () => {
    if (stopped) return;
    stopped = true;
    sdk.users -= 1;
    // The last host's stop flushes what the batch processor still holds.
    if (sdk.users === 0) {
      running = undefined;
      await sdk.shutdown();
    }
  };
}

/** Whether the standard variables already name the service (then they win over the default). */
function namesService(env: Env): boolean {
  if (env.OTEL_SERVICE_NAME) return true;
  return (env.OTEL_RESOURCE_ATTRIBUTES ?? '').split(',').some((kv) => kv.trim().startsWith('service.name='));
}

async function boot(env: Env): Promise<Running> {
  // Loaded here, not at the top: a host without an endpoint never loads the SDK.
  const { NodeSDK } = await import('@opentelemetry/sdk-node');
  const sdk = new NodeSDK({
    ...(namesService(env) ? {} : { serviceName: 'handoff' }),
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [],
  });
  sdk.start();
  markTracingEnabled();
  return { users: 0, shutdown: () => sdk.shutdown() };
}
