/**
 * A digest thread (pool.ts starts it from this file, beside the pool's own module): batches of
 * tasks in as messages, their digests out, one batch at a time since they share the read blocks.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { createDigester, type DigestAnswer } from './digester.js';

const port = parentPort!;
const digester = createDigester((workerData as { path: string }).path);
let queue = Promise.resolve();
port.on('message', ({ tasks }: { tasks: Float64Array }) => {
  queue = queue.then(async () => {
    const answer: DigestAnswer = await digester.run(tasks);
    port.postMessage(answer, 'digests' in answer ? [answer.digests.buffer] : []);
  });
});
