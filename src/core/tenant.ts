/**
 * Whose jobs: each API token of `mediagate serve` is a tenant, and the local
 * operator (the CLI, the library, the API while the store holds no token)
 * one more, named so. A ref is unique within a tenant; a tenant sees and
 * spends only its own jobs unless it is an admin.
 */
export const LOCAL_TENANT = "local";
