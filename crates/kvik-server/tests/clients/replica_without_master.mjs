// node-redis and ioredis against a kvik replica whose master is unreachable: they
// connect at once (ready), see role:slave and master_link_status:down, read the
// stale data, and get READONLY for writes. With ACTIVE=1 the replica is an active
// one (seed 004 case 3): role:active-replica, and writes succeed. Run by
// tests/clients.rs with PORT set.
import Redis from 'ioredis';
import { createClient } from 'redis';

const port = Number(process.env.PORT);
const active = process.env.ACTIVE === '1';
const within = (ms, what, promise) =>
  Promise.race([
    promise,
    new Promise((_, reject) => setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)),
  ]);

function field(info, name) {
  const line = info.split('\r\n').find((l) => l.startsWith(`${name}:`));
  return line && line.slice(name.length + 1);
}

async function check(name, client) {
  const info = await client.info('replication');
  const role = active ? 'active-replica' : 'slave';
  if (field(info, 'role') !== role) throw new Error(`${name}: role is ${field(info, 'role')}`);
  if (field(info, 'master_link_status') !== 'down') {
    throw new Error(`${name}: master_link_status is ${field(info, 'master_link_status')}`);
  }
  const stale = await client.get('stale');
  if (stale !== 'v') throw new Error(`${name}: GET stale gave ${stale}`);
  if (active) {
    await client.set('x', name);
    if ((await client.get('x')) !== name) throw new Error(`${name}: the write did not stick`);
    return;
  }
  try {
    await client.set('x', 'y');
    throw new Error(`${name}: a write on the replica succeeded`);
  } catch (e) {
    if (!String(e.message).startsWith('READONLY')) throw new Error(`${name}: write failed with ${e.message}`);
  }
}

const io = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
await within(5000, 'ioredis ready', new Promise((resolve, reject) => {
  io.once('ready', resolve);
  io.once('error', reject);
}));
await check('ioredis', io);
io.disconnect();

const nr = createClient({ socket: { host: '127.0.0.1', port, reconnectStrategy: false } });
await within(5000, 'node-redis connect', nr.connect());
await check('node-redis', nr);
await nr.quit();
console.log('ok');
