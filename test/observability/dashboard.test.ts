/**
 * The Grafana dashboard of docs/ loads as is: valid JSON of Grafana's dashboard model, every panel
 * on the templated Prometheus data source, and every query naming metrics a gateway exports.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import { createGateway, MemoryTransactionStore } from '../../src/index.js';
import { repoRoot } from '../gateway/helpers.js';

interface Panel {
  id: number;
  title: string;
  type: string;
  datasource: { type: string; uid: string };
  gridPos: { x: number; y: number; w: number; h: number };
  targets: Array<{ refId: string; expr: string }>;
}

describe('the Grafana dashboard', () => {
  it('is a dashboard model whose queries name exported metrics only', async () => {
    const dashboard = JSON.parse(await readFile(path.join(repoRoot, 'docs', 'grafana-dashboard.json'), 'utf8')) as {
      title: string;
      uid: string;
      schemaVersion: number;
      panels: Panel[];
      templating: { list: Array<{ name: string; type: string }> };
    };
    expect(dashboard.title).to.be.a('string');
    expect(dashboard.schemaVersion).to.be.a('number');
    expect(dashboard.templating.list.find((v) => v.name === 'datasource')?.type).to.equal('datasource');
    expect(new Set(dashboard.panels.map((p) => p.id)).size).to.equal(dashboard.panels.length);
    // A store that queues (as PostgresTransactionStore does) has the queue gauge too.
    const store = Object.assign(new MemoryTransactionStore(), { counters: { saved: 0, queued: 0, dropped: { queueFull: 0 } } });
    const gateway = createGateway({ config: { apis: [] }, metrics: {}, store });
    const families = gateway.metrics!.registry.getMetricsAsArray().map((m) => m.name);
    await gateway.close();
    const exported = new Set(families.flatMap((name) => [name, `${name}_bucket`, `${name}_sum`, `${name}_count`]));
    for (const panel of dashboard.panels) {
      expect(panel.datasource.uid, panel.title).to.equal('${datasource}');
      expect(panel.gridPos.w, panel.title).to.be.within(1, 24);
      expect(panel.targets.length, panel.title).to.be.greaterThan(0);
      for (const { expr } of panel.targets) {
        const names = [...expr.matchAll(/\b((?:gateway|process|nodejs)_[a-z_]+)/g)].map((m) => m[1]!);
        expect(names.length, expr).to.be.greaterThan(0);
        for (const name of names) expect(exported.has(name), `${panel.title}: ${name}`).to.equal(true);
      }
    }
  });
});
