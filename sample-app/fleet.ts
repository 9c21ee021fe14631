// `npm run fleet`: two instances of the sample app (FLEET_SIZE), on PORT (3000) and the ports
// after it, sharing one Redis and one PostgreSQL, their `pg` connections within one FleetBudget
// of DB_BUDGET (6) places, fewer than the instances' maxSize together (5 each). Defaults: the
// local Redis and PostgreSQL. Each instance's dashboard (/pools/ui) shows the budget, its places
// per instance and where they moved.
import { startSample, type RunningSample } from './main.js';

export async function startFleet(env: NodeJS.ProcessEnv = process.env, size = Number(env.FLEET_SIZE ?? 2)) {
  const shared: NodeJS.ProcessEnv = {
    ...env,
    REDIS_URL: env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    DATABASE_URL: env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    DB_BUDGET: env.DB_BUDGET ?? '6',
  };
  const port = Number(env.PORT ?? 3000);
  const instances: RunningSample[] = [];
  try {
    for (let i = 0; i < size; i++)
      instances.push(
        await startSample({ env: { ...shared, PORT: String(port === 0 ? 0 : port + i) }, logger: ['warn', 'error'] }),
      );
  } catch (err) {
    await Promise.all(instances.map((s) => s.close()));
    throw err;
  }
  return { instances, budget: Number(shared.DB_BUDGET), close: () => Promise.all(instances.map((s) => s.close())) };
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) {
  const fleet = await startFleet();
  console.log(
    `\nnestjs-shared-pool sample fleet: ${fleet.instances.length} instances, pg connections within a budget of ${fleet.budget}`,
  );
  for (const s of fleet.instances) console.log(`  ${s.url}   dashboard: ${s.url}/pools/ui`);
  const [a, b] = fleet.instances;
  console.log(`  load one, then the other, and watch the places move:`);
  console.log(
    `    for i in $(seq 200); do curl -s -X POST ${a!.url}/notes -H 'content-type: application/json' -d '{"text":"hi"}' & done`,
  );
  if (b !== undefined) console.log(`    (and the same on ${b.url})`);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.log(`${signal}: finishing requests in flight, closing pools and the budget`);
      void fleet.close().then(() => process.exit(0));
    });
  }
}
