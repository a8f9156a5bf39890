/**
 * Migration 9: what a saved output's own bytes say (an image's width and
 * height, a video's and its length), read when it is saved; apart from the
 * provider's metadata, which is what the provider said of it. Null for
 * outputs saved before, and where the bytes say nothing mediagate reads.
 */
const statements = () => `
ALTER TABLE outputs ADD COLUMN media_json TEXT
`;

export const migration009 = {
  version: 9,
  name: "output_media",
  sqlite: statements(),
  postgres: statements(),
};
