// The fake Stripe API for a whole e2e run (tests/e2e/fakes.mjs, fakeStripe): run.sh starts it on the port
// it gave the server as STRIPE_API_BASE, with the secret key it gave as STRIPE_SECRET_KEY.
import { fakeStripe } from './fakes.mjs';

const [port, key] = process.argv.slice(2);
const stripe = await fakeStripe({ port: Number(port), key });
console.log(`fake Stripe on ${stripe.url}`);
