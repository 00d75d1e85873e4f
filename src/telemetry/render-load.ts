// What the metrics read from this process's renderer pool when they are collected (scrape or OTLP export).
import type { RenderService } from '../render/service.js';

export interface RenderLoad {
  queued: number;
  busy: number;
  /** Expired tiles waiting in the eager dirty queue (render.rerender_expired = "eager"). */
  dirty: number;
  /** Renderer restarts by reason since the process started. */
  restarts: Record<'replaced' | 'recycled' | 'page_replaced', number>;
}

export function renderLoad(render: RenderService | undefined): RenderLoad {
  const load = render?.load ?? { queued: 0, busy: 0 };
  const e = render?.events;
  return {
    queued: load.queued,
    busy: load.busy,
    dirty: render?.dirtyQueue.length ?? 0,
    restarts: { replaced: e?.renderersReplaced ?? 0, recycled: e?.renderersRecycled ?? 0, page_replaced: e?.pagesReplaced ?? 0 },
  };
}
