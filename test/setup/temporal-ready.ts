// Runs before every integration and e2e file (vitest `setupFiles`): waits for the run's
// Temporal dev servers, which test/setup/temporal-server.ts starts in the background, so
// that `testTemporalAddress()` and `temporalServers()` answer at once in the file.
import { awaitTemporalServers } from '../helpers/temporal-servers';

await awaitTemporalServers();
