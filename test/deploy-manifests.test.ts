// The deployment files that no cluster runs here: deploy/k8s/ (Kubernetes) parsed as YAML and checked against
// the image (Dockerfile) and the configuration schema, and deploy/compose.yaml against its nginx and config
// files. The compose file itself runs in test/image.test.ts.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { parse as parseToml } from 'smol-toml';
import yaml from 'js-yaml';
import { validateConfig } from '../src/config/load.js';
import { ROOT } from './helpers/server.js';

const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const load = (file: string) => yaml.load(read(file)) as any; // eslint-disable-line @typescript-eslint/no-explicit-any

/** What the Dockerfile's final stage declares: the exposed port, the health check's path, the user. */
function imageFacts() {
  const text = read('Dockerfile');
  const final = text.slice(text.lastIndexOf('\nFROM '));
  return {
    port: Number(/^EXPOSE (\d+)$/m.exec(final)?.[1]),
    healthPath: /HEALTHCHECK[\s\S]*?127\.0\.0\.1:(\d+)(\/\w+)/.exec(final)?.slice(1, 3),
    user: /^USER (\d+):(\d+)$/m.exec(final)?.slice(1, 3).map(Number),
  };
}

/** A configuration meant for the image, with its /app paths pointed at this checkout, checked by the schema. */
function validateImageConfig(toml: string, label: string) {
  const raw = parseToml(toml.replaceAll('/app/fixtures', path.join(ROOT, 'fixtures')));
  return validateConfig(raw, label, ROOT, { REDIS_URL: 'redis://127.0.0.1:6379/0' }).config;
}

/** Memory of one pod for `renderers` renderers: the rule of docs/deployment.md ("Kubernetes"), in MiB. */
const MIB_PER_RENDERER = { request: 1152, limit: 1792 };
const mib = (q: string) => {
  const m = /^(\d+(?:\.\d+)?)(Mi|Gi)$/.exec(q);
  assert.ok(m, `a memory quantity in Mi or Gi: ${q}`);
  return Number(m[1]) * (m[2] === 'Gi' ? 1024 : 1);
};

describe('deploy/k8s', () => {
  const kustomization = load('deploy/k8s/kustomization.yaml');
  const docs = Object.fromEntries((kustomization.resources as string[]).map((f) => [f, load(`deploy/k8s/${f}`)]));
  const find = (kind: string) => Object.values(docs).find((d) => d.kind === kind);
  const deployment = find('Deployment');
  const container = deployment.spec.template.spec.containers[0];
  const image = imageFacts();

  test('kustomization lists a ConfigMap, a Deployment, a Service and an HPA', () => {
    assert.deepEqual(Object.values(docs).map((d) => d.kind).sort(), ['ConfigMap', 'Deployment', 'HorizontalPodAutoscaler', 'Service']);
  });

  test('probes: liveness /health and readiness /ready on the port the image exposes; the image checks /health too', () => {
    const port = container.ports.find((p: { name: string }) => p.name === container.livenessProbe.httpGet.port);
    assert.equal(port.containerPort, image.port);
    assert.equal(image.port, 8080);
    assert.equal(container.livenessProbe.httpGet.path, '/health');
    assert.equal(container.readinessProbe.httpGet.path, '/ready');
    assert.equal(container.readinessProbe.httpGet.port, port.name);
    assert.deepEqual(image.healthPath, ['8080', '/health']);
    // The configuration the pods serve listens where the probes look.
    const config = validateImageConfig(docs['configmap.yaml'].data['config.toml'], 'configmap config.toml');
    assert.equal(config.server.port, image.port);
    assert.equal(config.server.host, '0.0.0.0');
  });

  test('runs as the image\'s non-root user, with a grace period for the drain', () => {
    const sc = deployment.spec.template.spec.securityContext;
    assert.equal(sc.runAsNonRoot, true);
    assert.deepEqual([sc.runAsUser, sc.runAsGroup], image.user);
    assert.ok(deployment.spec.template.spec.terminationGracePeriodSeconds >= 30);
  });

  test('resources follow the per-renderer rule for the renderers the configuration starts; CPU request = renderers', () => {
    const config = validateImageConfig(docs['configmap.yaml'].data['config.toml'], 'configmap config.toml');
    const workers = config.server.workers;
    assert.equal(typeof workers, 'number', 'a pod sets its process count (a container sees the node\'s cores)');
    const renderers = (workers as number) * (config.render.pool_size as number);
    const { requests, limits } = container.resources;
    assert.equal(Number(requests.cpu), renderers);
    assert.equal(mib(requests.memory), renderers * MIB_PER_RENDERER.request);
    assert.equal(mib(limits.memory), renderers * MIB_PER_RENDERER.limit);
    assert.equal(limits.cpu, undefined, 'no CPU limit: renders are not throttled');
  });

  test('the Service selects the pods and targets the named port; the HPA scales the Deployment on CPU', () => {
    const service = find('Service');
    assert.deepEqual(service.spec.selector, deployment.spec.template.metadata.labels);
    assert.deepEqual(deployment.spec.selector.matchLabels, deployment.spec.template.metadata.labels);
    assert.ok(container.ports.some((p: { name: string }) => p.name === service.spec.ports[0].targetPort));
    const hpa = find('HorizontalPodAutoscaler');
    assert.deepEqual(hpa.spec.scaleTargetRef, { apiVersion: 'apps/v1', kind: 'Deployment', name: deployment.metadata.name });
    assert.equal(hpa.spec.metrics[0].resource.name, 'cpu');
    assert.ok(hpa.spec.minReplicas >= 2 && hpa.spec.maxReplicas > hpa.spec.minReplicas);
    // The volume the config is mounted from is the ConfigMap of the kustomization.
    const volume = deployment.spec.template.spec.volumes.find((v: { name: string }) => v.name === 'config');
    assert.equal(volume.configMap.name, find('ConfigMap').metadata.name);
    assert.ok(container.volumeMounts.some((m: { mountPath: string; name: string }) => m.mountPath === '/config' && m.name === 'config'));
  });
});

describe('deploy/compose.yaml', () => {
  const compose = load('deploy/compose.yaml');

  test('two instances on one Redis behind nginx, whose upstreams are the instances\' service names', () => {
    assert.deepEqual(Object.keys(compose.services).sort(), ['nginx', 'redis', 'tiles-a', 'tiles-b']);
    const nginx = read('deploy/fleet/nginx.conf');
    for (const name of ['tiles-a', 'tiles-b']) {
      const s = compose.services[name];
      assert.equal(s.environment.REDIS_URL, 'redis://redis:6379/0');
      assert.ok(s.volumes.includes('./fleet/config.toml:/config/config.toml:ro'));
      assert.match(s.healthcheck.test.join(' '), /\/ready/);
      assert.match(nginx, new RegExp(`server ${name}:8080 `));
    }
    assert.match(nginx, /proxy_set_header X-Request-Id /);
  });

  test('readiness reaches nginx: a 503 goes to the other instance, and nginx waits for both to be healthy', () => {
    const nginx = read('deploy/fleet/nginx.conf');
    const next = /^\s*proxy_next_upstream ([^;]+);/m.exec(nginx)?.[1].split(/\s+/) ?? [];
    for (const c of ['error', 'timeout', 'http_503']) assert.ok(next.includes(c), `proxy_next_upstream has ${c}: ${next.join(' ')}`);
    assert.equal(Number(/^\s*proxy_next_upstream_tries (\d+);/m.exec(nginx)?.[1]), 2, 'one try per instance');
    // The healthy condition means ready: the instances' health checks ask /ready (above).
    assert.deepEqual(compose.services.nginx.depends_on, { 'tiles-a': { condition: 'service_healthy' }, 'tiles-b': { condition: 'service_healthy' } });
  });

  test('the fleet configuration is valid and shares its render cache through REDIS_URL', () => {
    const config = validateImageConfig(read('deploy/fleet/config.toml'), 'deploy/fleet/config.toml');
    assert.equal(config.cache.shared, 'redis://127.0.0.1:6379/0');
    assert.equal(config.server.port, imageFacts().port);
  });
});
