// typage (npm age-encryption), the TypeScript age, for tests/age/typage.rs: one of
//   node typage.mjs keygen                      -> prints "IDENTITY RECIPIENT" (hybrid, post-quantum)
//   node typage.mjs encrypt RECIPIENT < in > out
//   node typage.mjs decrypt IDENTITY < in > out
// The package is found through TYPAGE (its directory, scripts/test-all installs it).
import { readFileSync, writeSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const age = await import(pathToFileURL(join(process.env.TYPAGE, "dist/index.js")).href);
const [cmd, key] = process.argv.slice(2);
const out = (bytes) => { let at = 0; while (at < bytes.length) at += writeSync(1, bytes, at); };
if (cmd === "keygen") {
  const id = await age.generateHybridIdentity();
  out(new TextEncoder().encode(`${id} ${await age.identityToRecipient(id)}\n`));
} else if (cmd === "encrypt") {
  const e = new age.Encrypter();
  e.addRecipient(key);
  out(await e.encrypt(new Uint8Array(readFileSync(0))));
} else if (cmd === "decrypt") {
  const d = new age.Decrypter();
  d.addIdentity(key);
  out(await d.decrypt(new Uint8Array(readFileSync(0))));
} else {
  throw new Error(`unknown command ${cmd}`);
}
