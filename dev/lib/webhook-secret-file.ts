// Where `npm start --webhook-url` leaves the local endpoint's signing secret for
// `npm run webhook-receiver` to read.
import path from "node:path";

export const webhookSecretFile = (stateDirectory: string) => path.join(stateDirectory, "webhook-secret");
