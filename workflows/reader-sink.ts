// A read of the workflow's stream, told to the worker process: its model calls then put their
// text in their heartbeats for the reader (activities/live-readers.ts). A sink call is not a
// command and leaves no trace in history; queries are never replayed, so it is made for every
// read a worker answers.
import { proxySinks, type Sinks } from '@temporalio/workflow';

export interface KeelReaderSinks extends Sinks {
  keelReaders: {
    read(): void;
  };
}

const { keelReaders } = proxySinks<KeelReaderSinks>();

/** Someone reads this workflow's stream now. */
export function noteStreamRead(): void {
  keelReaders.read();
}
