// How the user ran this CLI, so that the commands it suggests ("next: handoff approve …") are ones
// that work as typed: `npm run handoff -- …` in a checkout (the README's way: `npx handoff` there
// installs the checkout as a package first, rebuilding it for a minute), `npx handoff …`, or a
// `handoff` on the PATH.

/** The command prefix that runs this CLI the way it was run. */
export function cliCommand(env: NodeJS.ProcessEnv = process.env): string {
  // npm sets these for the scripts it runs: `npm run handoff` runs the package script `handoff`,
  // `npx`/`npm exec` is the command `exec`.
  const npmRun = env.npm_command === 'run' || env.npm_command === 'run-script';
  if (npmRun && env.npm_lifecycle_event === 'handoff') return 'npm run handoff --';
  if (env.npm_command === 'exec') return 'npx handoff';
  return 'handoff';
}
