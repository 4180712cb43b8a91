// An independent count of GGUF files: Hugging Face's @huggingface/gguf parser (from npm) reads each
// file given and prints one JSON line: its tensors and the sum of their element counts.
import { gguf } from "@huggingface/gguf";

for (const path of process.argv.slice(2)) {
  const { tensorInfos } = await gguf(path, { allowLocalFile: true });
  let elements = 0n;
  for (const t of tensorInfos) elements += t.shape.reduce((a, b) => a * BigInt(b), 1n);
  console.log(JSON.stringify({ path, tensors: tensorInfos.length, elements: elements.toString() }));
}
