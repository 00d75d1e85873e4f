// Entry of a render pool thread (Piscina): one RenderThread per thread, configured by the pool's workerData.
import { workerData } from 'node:worker_threads';
import { RenderThread, type ThreadConfig, type ThreadResult, type ThreadTask } from '../src/render/thread.js';

const thread = new RenderThread(workerData as ThreadConfig);

export default function run(task: ThreadTask): Promise<ThreadResult> {
  return thread.run(task);
}
