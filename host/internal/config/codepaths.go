package config

import "strings"

// CodePath is one entry of the default code patterns
// (tools.approval.code_patterns): files that make a program the operator
// runs for another purpose (an agent, an editor opening the project, a
// shell entering the directory, git, a build tool, CI) run code from
// them. Writing one is never auto-approved as only creating a new file.
type CodePath struct {
	// Pattern is the glob, matched as the sandbox matches its patterns
	// (against the path relative to its root and the absolute path,
	// case ignored).
	Pattern string
	// Loader is the program that loads such a file.
	Loader string
	// Why says what in the file runs code, and when.
	Why string
	// Example is a path Pattern matches, written by the test of the
	// entry.
	Example string
}

// CodePathEntries returns the one maintained list of the files that make
// agents, editors and build tools launch programs. The line it draws: a
// new file is asked about when a tool loads and runs it without the
// operator choosing to run that project's code — on opening the project
// in an editor or IDE (language servers, linters, test explorers, CMake,
// Cargo, MSBuild, Gradle and Bazel project loading), on entering the
// directory (direnv, mise, a shell's start-up files), on starting an
// interpreter there (.irbrc, .Rprofile, sitecustomize.py), at a command
// the operator runs there for another purpose (git, npm, cargo), or
// because a build definition the operator already runs pulls it in
// (Directory.Build.props, .bazelrc, node_modules of an install; a
// makefile, CMake file, git config or .envrc that includes it, and a
// GNUmakefile beside a Makefile, are found by the engine's includes
// check rather than listed). Files left out on purpose, and why:
//   - instructions a model reads (CLAUDE.md, AGENTS.md, GEMINI.md,
//     .github/copilot-instructions.md, .cursorrules, .goosehints): text,
//     not programs; a model that follows them still asks for tool calls
//     through the operator's agent, and cursor's and cline's rules
//     directories are listed anyway for the hooks they hold;
//   - new source a person chooses to build: a new project's Makefile,
//     CMakeLists.txt, package.json, pyproject.toml, setup.py or pom.xml,
//     and new source files, run only when the operator builds or runs
//     them (replacing an existing file is always asked about). Cargo.toml
//     and build.gradle are listed, not left out, because rust-analyzer and
//     the IDEs' Gradle import run them when the folder opens;
//   - go.work and go.mod toolchain lines: go fetches only checksummed
//     toolchains, and a Go build runs no project code;
//   - files that only change how tools read data (.gitattributes,
//     .editorconfig), and formatters' settings (.prettierrc,
//     .clang-format), read when a file is formatted, not when the project
//     opens;
//   - a pyproject.toml's or setup.cfg's [tool.pylint] init-hook, run by
//     an editor's pylint extension: asking for every new pyproject.toml
//     would ask for every new Python package, and pylint's own files
//     (.pylintrc, pylintrc) are listed.
func CodePathEntries() []CodePath {
	return []CodePath{
		// The shell entering a directory.
		{"**/.envrc", "direnv", "sourced by the shell on entering the directory once allowed, and again on every change an allow covers", ".envrc"},
		{"**/.tool-versions", "asdf, mise", "a `path:` version runs the tool's programs from a directory the file names", ".tool-versions"},
		{"**/mise*.toml", "mise", "`[hooks] enter` and `[env] _.source` run commands on entering the directory; tasks and tool paths name programs", "mise.toml"},
		{"**/.mise*.toml", "mise", "as mise.toml, in its hidden spelling (.mise.toml, .mise.local.toml)", ".mise.local.toml"},
		{"**/.mise/**", "mise", "as mise.toml, in a project's .mise/config.toml", ".mise/config.toml"},
		{"**/mise/config.toml", "mise", "as mise.toml, in a project's mise/config.toml", "mise/config.toml"},
		{"**/.config/mise/**", "mise", "as mise.toml, in a project's or a home's .config/mise/", ".config/mise/config.toml"},
		{"**/.config/mise.toml", "mise", "as mise.toml, in a project's .config/mise.toml", ".config/mise.toml"},
		{"**/flake.nix", "nix, nix-direnv", "an .envrc's `use flake` evaluates it and runs its shellHook on entering the directory", "flake.nix"},
		{"**/shell.nix", "nix, nix-direnv", "an .envrc's `use nix` (and nix-shell) runs its shellHook", "shell.nix"},
		{"**/default.nix", "nix, nix-direnv", "use nix and nix-shell fall back to it when there is no shell.nix", "default.nix"},
		{"**/devenv.nix", "devenv", "its enterShell and processes run on entering the shell, and from an .envrc", "devenv.nix"},
		{"**/devbox.json", "devbox", "its init_hook runs on devbox shell and from the .envrc devbox generates", "devbox.json"},

		// Shells' start-up files (a root that holds a home directory).
		{"**/.bashrc", "bash", "run by every interactive shell", ".bashrc"},
		{"**/.bash_profile", "bash", "run by every login shell", ".bash_profile"},
		{"**/.bash_login", "bash", "run by a login shell without .bash_profile", ".bash_login"},
		{"**/.bash_logout", "bash", "run when a login shell exits", ".bash_logout"},
		{"**/.bash_aliases", "bash", "sourced by the .bashrc Debian and Ubuntu install", ".bash_aliases"},
		{"**/.profile", "sh, bash, dash", "run by every login shell", ".profile"},
		{"**/.zshrc", "zsh", "run by every interactive shell", ".zshrc"},
		{"**/.zshenv", "zsh", "run by every zsh, scripts included", ".zshenv"},
		{"**/.zprofile", "zsh", "run by every login shell", ".zprofile"},
		{"**/.zlogin", "zsh", "run by every login shell", ".zlogin"},
		{"**/.zlogout", "zsh", "run when a login shell exits", ".zlogout"},
		{"**/.config/fish/**", "fish", "config.fish, conf.d/ and functions/ run in every shell", ".config/fish/config.fish"},
		{"**/.config/autostart/**", "desktop sessions (XDG autostart)", "each .desktop file's Exec runs at login", ".config/autostart/x.desktop"},
		{"**/.config/systemd/**", "systemd --user", "user units run at login or on a timer once enabled (a wants/ link enables one)", ".config/systemd/user/x.service"},
		{"**/.config/go/env", "go", "go env -w's file: `GOFLAGS=-toolexec` runs a program at every build", ".config/go/env"},

		// Editors opening the project.
		{"**/.vscode/**", "VS Code and its forks (Cursor, Windsurf, VSCodium)", "tasks.json runs tasks on folder open; settings name interpreters, linters and terminal profiles; mcp.json names servers it starts", ".vscode/tasks.json"},
		{"**/*.code-workspace", "VS Code and its forks", "a workspace file carries settings, tasks and launch configurations like .vscode/", "project.code-workspace"},
		{"**/.idea/**", "JetBrains IDEs", "run configurations, external tools and startup tasks run programs; the project's SDK paths name interpreters", ".idea/workspace.xml"},
		{"**/.zed/**", "Zed", "settings.json names language servers and context servers it starts on open; tasks.json", ".zed/settings.json"},
		{"**/.helix/**", "Helix", "languages.toml names the language-server commands it starts when a file opens", ".helix/languages.toml"},
		{"**/.dir-locals*.el", "Emacs", "eval: forms and hooks in .dir-locals.el (and its second file) run when a file below is visited", ".dir-locals.el"},
		{"**/.exrc", "Vim and Neovim ('exrc')", "ex commands, :! included, run at start in the directory", ".exrc"},
		{"**/.vimrc", "Vim ('exrc'; a home's always)", "Vim script run at start", ".vimrc"},
		{"**/_vimrc", "Vim on Windows", "as .vimrc", "_vimrc"},
		{"**/.nvimrc", "Neovim ('exrc')", "Vim script run at start in the directory", ".nvimrc"},
		{"**/.nvim.lua", "Neovim ('exrc')", "Lua run at start in the directory once trusted", ".nvim.lua"},
		{"**/.vim/**", "Vim", "a home's plugin/, ftplugin/ and autoload/ scripts run at every start", ".vim/plugin/x.vim"},
		{"**/.config/nvim/**", "Neovim", "a home's init.lua and plugin/ run at every start", ".config/nvim/init.lua"},
		{"**/.devcontainer/**", "Dev Containers (VS Code, Codespaces, devcontainer CLI)", "initializeCommand runs on the host, postCreateCommand in the container, when the folder opens", ".devcontainer/devcontainer.json"},
		{"**/.devcontainer.json", "Dev Containers", "as .devcontainer/devcontainer.json, in one file", ".devcontainer.json"},

		// Agents starting in the project.
		{"**/.mcp.json", "Claude Code", "the project's MCP servers are commands it starts", ".mcp.json"},
		{"**/.claude/**", "Claude Code", "settings.json and settings.local.json hooks and statusLine run commands; commands/ and agents/ steer it", ".claude/settings.json"},
		{"**/.cursor/**", "Cursor", "mcp.json servers and hooks.json commands it runs; rules", ".cursor/mcp.json"},
		{"**/.gemini/**", "Gemini CLI", "settings.json mcpServers and hooks are commands it runs", ".gemini/settings.json"},
		{"**/.qwen/**", "Qwen Code", "settings.json mcpServers, as Gemini CLI's", ".qwen/settings.json"},
		{"**/.codex/**", "Codex CLI", "config.toml's `[mcp_servers]` are commands it starts in a trusted project", ".codex/config.toml"},
		{"**/opencode.json", "opencode", "mcp servers are commands it starts; plugins are code it loads", "opencode.json"},
		{"**/opencode.jsonc", "opencode", "as opencode.json", "opencode.jsonc"},
		{"**/.opencode/**", "opencode", "plugin/ code it loads, and its configuration", ".opencode/opencode.json"},
		{"**/.amazonq/**", "Amazon Q Developer", "mcp.json servers are commands it starts", ".amazonq/mcp.json"},
		{"**/.kiro/**", "Kiro", "settings/mcp.json servers, hooks/*.kiro.hook runCommand actions and agents/*.json hooks run commands", ".kiro/settings/mcp.json"},
		{"**/.roo/**", "Roo Code", "mcp.json servers are commands it starts", ".roo/mcp.json"},
		{"**/.clinerules/**", "Cline", "hooks/ scripts run at its task and tool events", ".clinerules/hooks/PreToolUse"},
		{"**/.continue/**", "Continue", "config.json, config.yaml and mcpServers/ name commands it starts", ".continue/config.json"},
		{"**/.windsurf/**", "Windsurf", "hooks.json commands, MCP servers and workflows", ".windsurf/mcp.json"},
		{"**/.junie/**", "JetBrains Junie", "mcp/mcp.json servers are commands it starts", ".junie/mcp/mcp.json"},
		{"**/crush.json", "Crush", "mcp and lsp entries are commands it starts", "crush.json"},
		{"**/.crush.json", "Crush", "as crush.json", ".crush.json"},
		{"**/.aider.conf.yml", "Aider", "lint-cmd and test-cmd run after every edit", ".aider.conf.yml"},
		{"**/.config/goose/**", "Goose", "config.yaml extensions are commands it starts", ".config/goose/config.yaml"},

		// git and its hook managers.
		{"**/.gitconfig", "git", "core.fsmonitor, core.pager, aliases and filters run programs in every repository (a root holding a home)", ".gitconfig"},
		{"**/.config/git/**", "git", "the user configuration's other place, and its hooks and attributes", ".config/git/config"},
		{"**/.gitmodules", "git", "submodules: what git clones and checks out into the tree", ".gitmodules"},
		{"**/.husky/**", "husky", "its hook scripts run at every commit", ".husky/pre-commit"},
		{"**/.pre-commit-config.yaml", "pre-commit", "its hooks (local entries included) run at every commit", ".pre-commit-config.yaml"},
		{"**/lefthook*", "lefthook", "`run:` commands in lefthook.yml or lefthook-local.yml run at every commit", "lefthook-local.yml"},
		{"**/.lefthook*", "lefthook", "as lefthook.yml, in its hidden spellings", ".lefthook.yml"},
		{"**/.lefthook/**", "lefthook", "its script directory's scripts run at every commit", ".lefthook/pre-commit/x.sh"},
		{"**/.overcommit.yml", "overcommit", "its hooks run at every commit", ".overcommit.yml"},
		{"**/.simple-git-hooks*", "simple-git-hooks", "its commands run at every commit", ".simple-git-hooks.json"},
		{"**/simple-git-hooks.*", "simple-git-hooks", "as .simple-git-hooks.json", "simple-git-hooks.js"},
		{"**/.lintstagedrc*", "lint-staged", "its commands run from the pre-commit hook", ".lintstagedrc.json"},
		{"**/lint-staged.config.*", "lint-staged", "as .lintstagedrc, and code itself", "lint-staged.config.js"},

		// CI, run with the repository's secrets once pushed.
		{"**/.github/workflows/**", "GitHub Actions", "workflows run on push and pull request", ".github/workflows/ci.yml"},
		{"**/.github/actions/**", "GitHub Actions", "local actions a workflow uses run with it", ".github/actions/setup/action.yml"},
		{"**/.gitlab-ci.yml", "GitLab CI", "its jobs run on push", ".gitlab-ci.yml"},
		{"**/.forgejo/workflows/**", "Forgejo Actions", "workflows run on push", ".forgejo/workflows/ci.yml"},
		{"**/.gitea/workflows/**", "Gitea Actions", "workflows run on push", ".gitea/workflows/ci.yml"},
		{"**/.circleci/**", "CircleCI", "config.yml jobs run on push", ".circleci/config.yml"},
		{"**/Jenkinsfile", "Jenkins", "its pipeline runs on push", "Jenkinsfile"},
		{"**/azure-pipelines.yml", "Azure Pipelines", "its jobs run on push", "azure-pipelines.yml"},
		{"**/bitbucket-pipelines.yml", "Bitbucket Pipelines", "its steps run on push", "bitbucket-pipelines.yml"},
		{"**/.travis.yml", "Travis CI", "its scripts run on push", ".travis.yml"},
		{"**/.woodpecker*", "Woodpecker CI", ".woodpecker.yml and .woodpecker/ pipelines run on push", ".woodpecker.yml"},
		{"**/.woodpecker/**", "Woodpecker CI", "as .woodpecker.yml", ".woodpecker/ci.yml"},

		// Package managers and build tools, at any command in the directory.
		{"**/.npmrc", "npm, pnpm", "script-shell and node-options choose the programs every script runs with", ".npmrc"},
		{"**/.yarnrc", "yarn 1", "yarn-path names the program yarn runs instead of itself", ".yarnrc"},
		{"**/.yarnrc.yml", "yarn 2+", "yarnPath and plugins name code every yarn command runs", ".yarnrc.yml"},
		{"**/.yarn/releases/**", "yarn 2+", "the yarn a .yarnrc.yml's yarnPath runs", ".yarn/releases/yarn.cjs"},
		{"**/.yarn/plugins/**", "yarn 2+", "plugins a .yarnrc.yml loads into every yarn command", ".yarn/plugins/x.cjs"},
		{"**/.pnpmfile.cjs", "pnpm", "its hooks run at every install", ".pnpmfile.cjs"},
		{"**/.pnpmfile.mjs", "pnpm", "as .pnpmfile.cjs", ".pnpmfile.mjs"},
		{"**/bunfig.toml", "bun", "preload scripts run before every bun run and bun test", "bunfig.toml"},
		{"**/.bunfig.toml", "bun", "as bunfig.toml, a home's", ".bunfig.toml"},
		{"**/.cargo/**", "cargo, rust-analyzer", "config.toml's runner, rustc-wrapper and aliases run at every cargo command, and the editor runs cargo on open", ".cargo/config.toml"},
		{"**/build.rs", "cargo, rust-analyzer", "a package's build script runs before it compiles, and the editor builds on open", "build.rs"},
		{"**/rust-toolchain", "rustup", "a toolchain path runs that directory's rustc and cargo", "rust-toolchain"},
		{"**/rust-toolchain.toml", "rustup", "as rust-toolchain", "rust-toolchain.toml"},
		{"**/site-packages/*.pth", "python", "import lines in a site-packages .pth run at every interpreter start (a virtual environment in the root)", ".venv/lib/python3.12/site-packages/x.pth"},
		{"**/dist-packages/*.pth", "python (Debian's)", "as site-packages/*.pth", "lib/python3/dist-packages/x.pth"},
		{"**/sitecustomize.py", "python", "imported at every interpreter start when on the path", "sitecustomize.py"},
		{"**/usercustomize.py", "python", "as sitecustomize.py, for the user site", "usercustomize.py"},
		{"**/conftest.py", "pytest, editors' test discovery", "imported when tests are collected, which editors do on open", "conftest.py"},
		{"**/gradlew", "Gradle wrapper, IDEs", "the script IDEs run on import", "gradlew"},
		{"**/gradlew.bat", "Gradle wrapper", "as gradlew, on Windows", "gradlew.bat"},
		{"**/gradle/wrapper/**", "Gradle wrapper", "the jar gradlew runs and the distribution it downloads and runs", "gradle/wrapper/gradle-wrapper.properties"},
		{"**/gradle.properties", "Gradle", "org.gradle.java.home names the JVM every build runs", "gradle.properties"},
		{"**/settings.gradle*", "Gradle, IDEs", "the settings script runs at every build and when an IDE imports the project", "settings.gradle.kts"},
		{"**/mvnw", "Maven wrapper, IDEs", "the script IDEs run on import", "mvnw"},
		{"**/mvnw.cmd", "Maven wrapper", "as mvnw, on Windows", "mvnw.cmd"},
		{"**/.mvn/**", "Maven", "extensions.xml loads code into every build; jvm.config and the wrapper's files", ".mvn/extensions.xml"},

		// Editors and IDEs opening the project: language servers, linters
		// and test explorers load these by themselves.
		{"**/eslint.config.*", "ESLint (editors' ESLint servers: VS Code's extension, others')", "JavaScript the editor's ESLint server imports when a file of the project opens", "eslint.config.js"},
		{"**/.eslintrc*", "ESLint (editors' ESLint servers)", ".eslintrc.js and .eslintrc.cjs are JavaScript it runs; any spelling names parsers and plugins it loads, a relative path among them", ".eslintrc.js"},
		{"**/stylelint.config.*", "Stylelint (editors' Stylelint servers)", "JavaScript the editor's Stylelint server imports when a stylesheet opens", "stylelint.config.js"},
		{"**/.stylelintrc*", "Stylelint (editors' Stylelint servers)", "as stylelint.config.js; any spelling names plugins it loads", ".stylelintrc.js"},
		{"**/jest.config.*", "Jest (editors' test explorers)", "JavaScript the editor's Jest extension runs to list and run the tests when the folder opens", "jest.config.js"},
		{"**/vitest.config.*", "Vitest (editors' test explorers)", "JavaScript the editor's Vitest extension runs to list the tests when the folder opens", "vitest.config.ts"},
		{"**/vite.config.*", "Vite, Vitest (editors' test explorers)", "Vitest's configuration when there is no vitest.config, run as vitest.config", "vite.config.ts"},
		{"**/playwright.config.*", "Playwright (editors' test explorers)", "JavaScript the editor's Playwright extension runs to list the tests when the folder opens", "playwright.config.ts"},
		{"**/tailwind.config.*", "Tailwind CSS IntelliSense", "JavaScript the editor's Tailwind server imports when the folder opens", "tailwind.config.js"},
		{"**/.pylintrc", "pylint (editors' pylint extensions)", "init-hook is Python it runs and load-plugins imports modules, when the editor lints a file on open", ".pylintrc"},
		{"**/pylintrc", "pylint (editors' pylint extensions)", "as .pylintrc", "pylintrc"},
		{"**/CMakePresets.json", "CMake, IDEs (VS Code's CMake Tools, CLion, Visual Studio)", "IDEs configure the project with a preset when it opens: its cache variables (CMAKE_PROJECT_INCLUDE, a toolchain file) and environment name scripts and programs CMake runs", "CMakePresets.json"},
		{"**/CMakeUserPresets.json", "CMake, IDEs (VS Code's CMake Tools, CLion, Visual Studio)", "as CMakePresets.json, the user's own presets read beside it", "CMakeUserPresets.json"},
		{"**/Cargo.toml", "cargo, rust-analyzer", "the editor runs cargo when the folder opens, which runs each package's build script (`build =` names any file, not only build.rs) and proc macros; a workspace's member globs pull a new package in", "Cargo.toml"},
		{"**/build.gradle", "Gradle, IDEs (IntelliJ, VS Code's Java extension)", "the build script IDEs run when they import the project on open, and again when it changes on disk", "build.gradle"},
		{"**/build.gradle.kts", "Gradle, IDEs (IntelliJ, VS Code's Java extension)", "as build.gradle, in Kotlin", "build.gradle.kts"},
		{"**/Directory.Build.*", "MSBuild, dotnet, IDEs (Visual Studio, C# Dev Kit, Rider)", "Directory.Build.props and .targets are imported into every project below them, which IDEs evaluate on open; their targets run commands (Exec); .rsp adds switches to every build", "Directory.Build.props"},
		{"**/Directory.Solution.*", "MSBuild, dotnet", "imported into every build of a solution below them", "Directory.Solution.targets"},
		{"**/*.bazelrc", "Bazel, bazelisk, IDE plugins", "a workspace's .bazelrc, and the files it imports (user.bazelrc), are read by every bazel command and the IDE's sync: --run_under, --repo_env and startup options run programs", ".bazelrc"},
		{"**/.bazelversion", "bazelisk", "names the Bazel it downloads and runs for every bazel command, a fork's (fork/version) among them", ".bazelversion"},
		{"**/tools/bazel", "Bazel", "bazel's launcher runs a workspace's tools/bazel in its place for every command", "tools/bazel"},
		{"**/node_modules/**", "Node.js, editors' language servers (ESLint, TypeScript)", "an install's packages are code every script, test and editor server loads: a file added there runs as that package", "node_modules/eslint/lib/api.js"},
		{"**/.pnp.cjs", "Yarn Plug'n'Play, editors' SDKs", "loaded into every node process of the project, the editor's servers among them", ".pnp.cjs"},
		{"**/.pnp.loader.mjs", "Yarn Plug'n'Play", "as .pnp.cjs, for ES modules", ".pnp.loader.mjs"},

		// Interpreters started in the directory.
		{"**/.irbrc", "irb (and rails console)", "Ruby run when irb starts in the directory", ".irbrc"},
		{"**/.pryrc", "pry", "Ruby run when pry starts in the directory", ".pryrc"},
		{"**/.Rprofile", "R, RStudio", "R run when R starts in the directory, which RStudio does on opening the project", ".Rprofile"},
		{"**/.Renviron", "R, RStudio", "read when R starts in the directory: R_PROFILE_USER and R_LIBS name code it runs", ".Renviron"},
		{"**/.octaverc", "GNU Octave", "run when Octave starts in the directory", ".octaverc"},
		{"**/.ghci", "GHCi", "its commands (:! and :def among them) run when ghci starts in the directory", ".ghci"},
	}
}

// DefaultCodePatterns returns the patterns of CodePathEntries, in order.
func DefaultCodePatterns() []string {
	entries := CodePathEntries()
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Pattern
	}
	return out
}

// CodePathLoader returns the program that loads files matching pattern,
// an entry of CodePathEntries, or "" for a pattern of the operator's.
func CodePathLoader(pattern string) string {
	for _, e := range CodePathEntries() {
		if e.Pattern == pattern {
			return e.Loader
		}
	}
	return ""
}

// codePatternsTOML is the code_patterns line of the init file: every
// default pattern, wrapped to fit 78 columns.
func codePatternsTOML() string {
	var b strings.Builder
	b.WriteString("code_patterns = [\n")
	line := " "
	for _, p := range DefaultCodePatterns() {
		item := ` "` + p + `",`
		if len(line)+len(item) > 78 {
			b.WriteString(line + "\n")
			line = " "
		}
		line += item
	}
	b.WriteString(line + "\n]")
	return b.String()
}
