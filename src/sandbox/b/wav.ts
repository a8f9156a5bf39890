/**
 * A real WAV file (RIFF, PCM, 16-bit, mono) holding a sine tone, written
 * byte by byte so the sandbox needs no audio tooling.
 */
export interface ToneOptions {
  seconds: number;
  frequencyHz: number;
  sampleRate?: number;
  /** 0..1 of full scale. */
  amplitude?: number;
}

const HEADER_BYTES = 44;

export function renderWav({ seconds, frequencyHz, sampleRate = 16_000, amplitude = 0.3 }: ToneOptions): Buffer {
  const sampleCount = Math.round(seconds * sampleRate);
  const dataBytes = sampleCount * 2;
  const wav = Buffer.alloc(HEADER_BYTES + dataBytes);
  wav.write("RIFF", 0, "ascii");
  wav.writeUInt32LE(HEADER_BYTES - 8 + dataBytes, 4);
  wav.write("WAVE", 8, "ascii");
  wav.write("fmt ", 12, "ascii");
  wav.writeUInt32LE(16, 16); // size of the fmt chunk
  wav.writeUInt16LE(1, 20); // PCM
  wav.writeUInt16LE(1, 22); // mono
  wav.writeUInt32LE(sampleRate, 24);
  wav.writeUInt32LE(sampleRate * 2, 28); // byte rate
  wav.writeUInt16LE(2, 32); // block align
  wav.writeUInt16LE(16, 34); // bits per sample
  wav.write("data", 36, "ascii");
  wav.writeUInt32LE(dataBytes, 40);
  const peak = Math.round(32_767 * amplitude);
  for (let index = 0; index < sampleCount; index++) {
    // A 20 ms fade at both ends so the tone does not click.
    const fade = Math.min(1, index / (sampleRate * 0.02), (sampleCount - index) / (sampleRate * 0.02));
    const sample = Math.round(peak * fade * Math.sin((2 * Math.PI * frequencyHz * index) / sampleRate));
    wav.writeInt16LE(sample, HEADER_BYTES + index * 2);
  }
  return wav;
}

/** Sample rate and length of a PCM WAV, or null when the bytes are not one. */
export function wavInfo(bytes: Buffer): { sampleRate: number; channels: number; bitsPerSample: number; seconds: number } | null {
  if (bytes.length < HEADER_BYTES || bytes.toString("ascii", 0, 4) !== "RIFF" || bytes.toString("ascii", 8, 12) !== "WAVE") return null;
  if (bytes.toString("ascii", 12, 16) !== "fmt " || bytes.readUInt16LE(20) !== 1) return null;
  const channels = bytes.readUInt16LE(22);
  const sampleRate = bytes.readUInt32LE(24);
  const bitsPerSample = bytes.readUInt16LE(34);
  if (bytes.toString("ascii", 36, 40) !== "data") return null;
  const dataBytes = bytes.readUInt32LE(40);
  if (HEADER_BYTES + dataBytes !== bytes.length) return null;
  return { sampleRate, channels, bitsPerSample, seconds: dataBytes / (sampleRate * channels * (bitsPerSample / 8)) };
}
