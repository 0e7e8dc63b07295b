import type { Command } from "commander";
import { USER_ROLES, type UserRole } from "../../server/domain/scope.ts";
import { withCatalog } from "../catalog.ts";
import { CliError, EXIT, emit } from "../output.ts";

const users = () => import("../../server/auth/dashboard-auth.ts");

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString("utf8")
    .replace(/\r?\n$/, "");
}

function role(value: string): UserRole {
  const found = USER_ROLES.find((r) => r === value);
  if (!found) throw new CliError(`--role must be one of ${USER_ROLES.join(", ")}`, EXIT.USAGE);
  return found;
}

export function registerUser(program: Command): void {
  const user = program.command("user").description("manage dashboard users (operator, support, admin)");

  user
    .command("create")
    .argument("<email>", "the user's email, used to sign in")
    .requiredOption("--role <role>", `one of ${USER_ROLES.join(", ")}`)
    .option("--name <name>", "display name (default: the part of the email before @)")
    .option("--password-stdin", "read the password from standard input instead of generating one")
    .option("--json", "print the result as JSON")
    .description("create a user; a generated password is printed once")
    .action(async (email: string, opts: { role: string; name?: string; passwordStdin?: boolean; json?: boolean }) => {
      const password = opts.passwordStdin ? await readStdin() : undefined;
      const { createUser } = await users();
      const created = await withCatalog((db) =>
        createUser(db, { email, role: role(opts.role), name: opts.name, password }),
      );
      const shown = created.generated ? created : { ...created, password: undefined };
      emit(
        Boolean(opts.json),
        shown,
        `Created ${created.role} ${created.email}.` +
          (created.generated ? ` Password, shown only now:\n\n  ${created.password}\n` : ""),
      );
    });

  user
    .command("role")
    .argument("<email>", "the user")
    .argument("<role>", `one of ${USER_ROLES.join(", ")}`)
    .option("--json", "print the result as JSON")
    .description("change a user's role")
    .action(async (email: string, newRole: string, opts: { json?: boolean }) => {
      const { setUserRole } = await users();
      await withCatalog((db) => setUserRole(db, { email, role: role(newRole) }));
      emit(Boolean(opts.json), { email, role: newRole }, `${email} is now ${newRole}.`);
    });

  user
    .command("list")
    .option("--json", "print the result as JSON")
    .description("list dashboard users")
    .action(async (opts: { json?: boolean }) => {
      const { listUsers } = await users();
      const listed = await withCatalog((db) => listUsers(db));
      emit(
        Boolean(opts.json),
        listed,
        listed.map((u) => `${u.email}  ${u.role}`).join("\n") || "No users yet: strata user create EMAIL --role admin",
      );
    });
}
