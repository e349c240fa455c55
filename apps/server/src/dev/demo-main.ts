/** `npm run demo` (see demo.ts). PORT and DATA_DIR choose the port (8080) and the data folder (./data-demo). */
import { demoInstructions, startDemo } from './demo.js';

const dataDir = process.env.DATA_DIR || './data-demo';
const demo = await startDemo({
  port: Number(process.env.PORT || 8080),
  host: process.env.HOST || '0.0.0.0',
  dataDir,
  stepMs: Number(process.env.DEMO_STEP_MS || 800),
  print: (line) => console.log(line),
});
console.log(demoInstructions(demo, dataDir));

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) process.exit(130);
    stopping = true;
    console.log('Stopping the demo...');
    void demo.close({ agentSignalledMs: signal === 'SIGINT' ? 3000 : 0 }).then(() => process.exit(0));
  });
}
