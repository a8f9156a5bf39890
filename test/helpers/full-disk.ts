import { localFolderOutputs, OutputSaveError, type OutputWriter } from "../../src/outputs/local-folder.js";

/** The real folder writer with a full disk for its first `failures` writes (a tiny tmpfs is not available here). */
export function fullDiskFor(failures: number): OutputWriter & { refused: number } {
  const writer = {
    refused: 0,
    prepare: (folder: string) => localFolderOutputs.prepare(folder),
    removeStale: (folder: string, stem: string) => localFolderOutputs.removeStale(folder, stem),
    async write(path: string, bytes: Buffer) {
      if (writer.refused < failures) {
        writer.refused++;
        throw new OutputSaveError(path, "ENOSPC", `cannot write ${path}: the disk is full (ENOSPC)`);
      }
      await localFolderOutputs.write(path, bytes);
    },
  };
  return writer;
}
