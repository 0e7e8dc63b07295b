/** @type {import('next').NextConfig} */
const nextConfig = {
  // Native and database packages are loaded by Node at run time, never bundled.
  serverExternalPackages: [
    "better-sqlite3",
    "pg",
    "@prisma/client",
    "@prisma/adapter-pg",
    "@prisma/adapter-better-sqlite3",
  ],
  typescript: { tsconfigPath: "tsconfig.json" },
  poweredByHeader: false,
};

export default nextConfig;
