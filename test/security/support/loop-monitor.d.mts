import type { IncomingMessage, ServerResponse } from 'node:http';
import type { LoopDelay } from './loop-delay.js';

export declare const RESOLUTION_MS: number;
export declare function monitorLoop(): { read(): LoopDelay };
export declare function loopDelayHandler(): (req: IncomingMessage, res: ServerResponse) => void;
