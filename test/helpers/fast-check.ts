// fast-check for the property tests, with one seed for every run: several properties count how often each form
// of their generated input ran and require a minimum, and with a fresh random seed per run such a count could
// fall short now and then (it did once in a clean run: 18 of a required 20). A fixed seed makes `make test` give the same
// answer every time while each property still checks its thousands of generated cases. FC_SEED=<number> runs
// them under another seed, to explore.
import fc from 'fast-check';

const FIXED_SEED = 20261124;
const asked = process.env.FC_SEED;
export const FC_SEED = asked !== undefined && /^-?\d+$/.test(asked) ? Number(asked) : FIXED_SEED;
fc.configureGlobal({ seed: FC_SEED });

export default fc;
