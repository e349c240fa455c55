/** `npm run demo` (see demo.ts). PORT and DATA_DIR choose the port (8080) and the data folder (./data-demo). */
import { demoInstructions, startDemo } from './demo.js';
import { runDemoLoop } from './demo-loop.js';
import { OWNER_ONLY_UMASK } from '../platform/data-dir.js';

process.umask(OWNER_ONLY_UMASK);

const dataDir = process.env.DATA_DIR || './data-demo';
const demo = await startDemo({
  port: Number(process.env.PORT || 8080),
  host: process.env.HOST || '0.0.0.0',
  dataDir,
  stepMs: Number(process.env.DEMO_STEP_MS || 800),
  print: (line) => console.log(line),
});
console.log(demoInstructions(demo, dataDir));
console.log('The whole loop, step by step (each link opens where a person sees it):');
try {
  await runDemoLoop(demo, (line) => console.log(line));
  console.log('\nThe loop is done. The site stays up for you to try it yourself; Ctrl-C stops everything.');
} catch (err) {
  console.error(`The demo loop stopped: ${err instanceof Error ? err.message : String(err)}`);
}

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) process.exit(130);
    stopping = true;
    console.log('Stopping the demo...');
    void demo.close({ agentSignalledMs: signal === 'SIGINT' ? 3000 : 0 }).then(() => process.exit(0));
  });
}
