/** Image headers for D's tests: enough bytes for a size to be read, without drawing a picture. */

/** A PNG signature and IHDR chunk declaring `width` x `height`. */
export function pngHeader(width: number, height: number): Buffer {
  const bytes = Buffer.alloc(33);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(bytes, 0);
  bytes.writeUInt32BE(13, 8);
  bytes.write("IHDR", 12, "latin1");
  bytes.writeUInt32BE(width, 16);
  bytes.writeUInt32BE(height, 20);
  bytes[24] = 8; // bit depth
  bytes[25] = 2; // RGB
  return bytes;
}

/** A JPEG start, an APP0 segment, then a baseline start-of-frame declaring `width` x `height`. */
export function jpegHeader(width: number, height: number): Buffer {
  const app0 = Buffer.from([0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00]);
  const frame = Buffer.alloc(19);
  frame.writeUInt16BE(0xffc0, 0);
  frame.writeUInt16BE(17, 2);
  frame[4] = 8;
  frame.writeUInt16BE(height, 5);
  frame.writeUInt16BE(width, 7);
  frame[9] = 3;
  return Buffer.concat([Buffer.from([0xff, 0xd8]), app0, frame]);
}

/** `count` native reference fields with URL values: input_image, input_image_2, … */
export function urlReferences(count: number): Record<string, string> {
  const fields: Record<string, string> = {};
  for (let position = 1; position <= count; position++) fields[position === 1 ? "input_image" : `input_image_${position}`] = `https://images.example/${position}.png`;
  return fields;
}
