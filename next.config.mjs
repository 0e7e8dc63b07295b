/** @type {import('next').NextConfig} */
const nextConfig = {
  // Native and database packages are loaded by Node at run time, never bundled.
  serverExternalPackages: [
    "better-sqlite3",
    "pg",
    "@prisma/client",
    "@prisma/adapter-pg",
    "@prisma/adapter-better-sqlite3",
    "@strata/git-spawn",
  ],
  // `npm test` type-checks the whole project once with tsc; the build need not do it again.
  typescript: { tsconfigPath: "tsconfig.json", ignoreBuildErrors: true },
  poweredByHeader: false,
};

export default nextConfig;
