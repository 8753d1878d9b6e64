/** The product version every service reports (kept in step with the root package.json). */
export const SVC_VERSION = '0.1.0';
