//! A small shell that runs commands in a simulated container, against its environment and its
//! in-memory filesystem ([`super::fs`]), the way busybox's `sh` and applets would: what an
//! exec probe (`cat /tmp/ready`) and `kubectl exec POD -- touch /tmp/ready` run.
//!
//! Programs (each also as a path, `/bin/cat`, and as `busybox NAME`):
//!
//! | program | does |
//! |---|---|
//! | `cat [FILE\|-]...` | prints files (no file or `-`: standard input) |
//! | `touch [-c] FILE...` | creates empty files |
//! | `rm [-f] [-r\|-R] FILE...` | removes files and (with `-r`) directories |
//! | `mkdir [-p] DIR...` | creates directories |
//! | `ls [PATH]...` | lists a directory's entries (or names a file), one a line; options are ignored |
//! | `test EXPR`, `[ EXPR ]` | `-e -f -d -s -r -w -x -n -z`, `= == !=`, `-eq -ne -lt -le -gt -ge`, `!`, `-a`, `-o` |
//! | `echo [-n] [-e] ...`, `printf FORMAT ...` | print (`printf`: `%s %d %i %c %x %%` and escapes) |
//! | `true`, `false`, `pwd`, `whoami`, `id`, `hostname` | as usual (the container runs as root) |
//! | `env [-i] [NAME=VALUE]... [COMMAND]`, `printenv [NAME]...` | the container's environment |
//! | `sleep N[s\|m\|h\|d]...` | waits, asynchronously (`sleep infinity` never ends): the caller enforces timeouts |
//! | `sh`, `bash`, `ash`, `dash` `[-e] -c SCRIPT [NAME [ARG]...]`, or reading the script from standard input | runs a script |
//!
//! Scripts: commands joined by `;`, `&&`, `||`, `|` (pipes; the stages run one after the
//! other), `&` (runs in the foreground) and new lines; `'…'` and `"…"` quoting, backslash
//! escapes, `#` comments; `$VAR`, `${VAR}`, `${VAR:-default}`, `$?`, `$#`, `$0`…`$9`, `$@`,
//! `$*`, with field splitting of unquoted expansions; `*` and `?` globs in a path's last part;
//! redirections `>`, `>>`, `<`, `2>`, `2>>`, `2>&1`, `>&2`; `NAME=value` assignments (alone, or
//! before a command for that command), `export`, `unset`, `set -e`, `cd`, `exit [N]`, `exec`,
//! `:`, `!` before a pipeline. Not supported (a syntax error, exit 2): `if`/`for`/`while`/
//! `case`, functions, `( … )` and `{ …; }` groups, command substitution (`$(…)`, backquotes),
//! here-documents, arithmetic `$((…))`.
//!
//! Messages and exit codes are busybox 1.36's: `cat: can't open 'F': No such file or directory`
//! (1), `rm: can't remove 'F': No such file or directory` (1), `sh: NAME: not found` (127),
//! `sh: can't create F: nonexistent directory` (a failed redirection, 1), syntax errors (2).
//! A program the shell does not know, run directly rather than from a script, is a failed
//! exec ([`ExecError::NotFound`]), as the runtime reports a missing executable.
//! Buffered output is capped at [`MAX_OUTPUT`] bytes a stream.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;

use super::fs::{self, Fs, FsError, Kind};
use super::runtime::ContainerRuntime;

/// The most output kept a stream when output is buffered (further output is dropped).
pub const MAX_OUTPUT: usize = 16 << 20;
/// How deep `sh -c "sh -c …"` may nest.
const MAX_DEPTH: usize = 32;

/// Where a container's files live.
pub trait FileSystem: Send + Sync {
    /// Runs `op` on the tree; `false` when the container is gone.
    fn with(&self, op: &mut dyn FnMut(&mut Fs)) -> bool;
}

impl FileSystem for std::sync::Mutex<Fs> {
    fn with(&self, op: &mut dyn FnMut(&mut Fs)) -> bool {
        op(&mut self.lock().unwrap_or_else(|e| e.into_inner()));
        true
    }
}

/// A container's filesystem as its node's runtime keeps it.
pub struct RuntimeFs {
    /// The runtime.
    pub runtime: Arc<dyn ContainerRuntime>,
    /// The container's ID in it.
    pub id: String,
}

impl FileSystem for RuntimeFs {
    fn with(&self, op: &mut dyn FnMut(&mut Fs)) -> bool {
        self.runtime.with_fs(&self.id, op)
    }
}

/// What a command runs in.
#[derive(Clone)]
pub struct Container {
    /// The environment of its processes, in order.
    pub env: Vec<(String, String)>,
    /// Its hostname.
    pub hostname: String,
    /// Its filesystem.
    pub fs: Arc<dyn FileSystem>,
}

/// What a command printed and its exit code.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Output {
    /// Standard output (empty when streamed).
    pub stdout: Vec<u8>,
    /// Standard error (empty when streamed).
    pub stderr: Vec<u8>,
    /// The exit code, 0 to 255.
    pub exit_code: i32,
}

/// Why a command could not start.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExecError {
    /// No command.
    #[error("no command given")]
    Empty,
    /// The program is not in the container.
    #[error("exec: {0:?}: executable file not found in $PATH")]
    NotFound(String),
}

/// A command's standard input.
pub enum Stdin {
    /// Nothing (end of file at once).
    Closed,
    /// Chunks until the sender is dropped.
    Stream(mpsc::Receiver<Bytes>),
}

/// Streamed output: `(1, data)` for standard output, `(2, data)` for standard error.
pub type Sink = mpsc::UnboundedSender<(u8, Vec<u8>)>;

/// Runs `argv` in container `c`. With `sink`, output goes there as it is produced and
/// [`Output`]'s buffers stay empty.
pub async fn exec(
    c: &Container,
    argv: &[String],
    stdin: Stdin,
    sink: Option<Sink>,
) -> Result<Output, ExecError> {
    let Some(first) = argv.first() else { return Err(ExecError::Empty) };
    if !is_program(argv) {
        return Err(ExecError::NotFound(first.clone()));
    }
    let stdin = match stdin {
        Stdin::Closed => StdinSrc::Empty,
        Stdin::Stream(rx) => StdinSrc::Rx(rx),
    };
    let mut sh = Sh::new(c, stdin, Emit { sink, ..Emit::default() }, 0);
    sh.top = true;
    let res = sh.run_program(argv.to_vec(), Input::Shared, Vec::new()).await;
    sh.emit.put(1, res.out);
    sh.emit.put(2, res.err);
    Ok(Output { stdout: sh.emit.out, stderr: sh.emit.err, exit_code: res.code })
}

/// containerd's message for an exec that could not start (the CRI `ExecSync` error, and the
/// streaming `Exec`'s after `error executing command in container: `).
pub fn exec_failure(e: &ExecError) -> String {
    match e {
        ExecError::Empty => "cmd cannot be empty".to_owned(),
        ExecError::NotFound(program) => format!(
            "failed to exec in container: failed to start exec {:?}: {}",
            exec_id(),
            runc_not_found(program)
        ),
    }
}

/// runc's error for a program that is not there: looked up in `PATH`, or a path to nothing.
pub fn runc_not_found(program: &str) -> String {
    let why = if program.contains('/') {
        format!("stat {program}: no such file or directory")
    } else {
        format!("{program:?}: executable file not found in $PATH")
    };
    format!(
        "OCI runtime exec failed: exec failed: unable to start container process: exec: {why}: unknown"
    )
}

/// A new exec process ID: 64 hex digits, as containerd makes them.
pub fn exec_id() -> String {
    (0..4).map(|_| format!("{:016x}", crate::util::rand_u64())).collect()
}

/// The name a program is known by: the last part of its path.
fn basename(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// Programs that are files in a busybox image (shell builtins such as `cd` or `exit` are not).
const PROGRAMS: &[&str] = &[
    "cat", "touch", "rm", "mkdir", "ls", "test", "[", "echo", "printf", "true", "false", "pwd",
    "whoami", "id", "hostname", "env", "printenv", "sleep", "sh", "bash", "ash", "dash", "busybox",
];

/// Shell builtins that are no file.
const BUILTINS: &[&str] = &[":", "exit", "cd", "export", "unset", "set", "exec", "wait"];

/// Whether `argv` names a program the container has.
fn is_program(argv: &[String]) -> bool {
    let Some(first) = argv.first() else { return false };
    let name = basename(first);
    if name == "busybox" {
        return argv.get(1).is_none_or(|a| PROGRAMS.contains(&a.as_str()));
    }
    !first.is_empty() && PROGRAMS.contains(&name)
}

#[derive(Default)]
struct Emit {
    out: Vec<u8>,
    err: Vec<u8>,
    sink: Option<Sink>,
}

impl Emit {
    fn put(&mut self, fd: u8, data: Vec<u8>) {
        if data.is_empty() {
            return;
        }
        if let Some(sink) = &self.sink {
            let _ = sink.send((fd, data));
            return;
        }
        let buf = if fd == 2 { &mut self.err } else { &mut self.out };
        let room = MAX_OUTPUT.saturating_sub(buf.len());
        buf.extend_from_slice(&data[..data.len().min(room)]);
    }
}

/// A command's result before it is routed.
#[derive(Default)]
struct Res {
    out: Vec<u8>,
    err: Vec<u8>,
    code: i32,
}

impl Res {
    fn code(code: i32) -> Res {
        Res { code, ..Res::default() }
    }

    fn fail(code: i32, message: String) -> Res {
        Res { err: format!("{message}\n").into_bytes(), code, ..Res::default() }
    }

    fn say(&mut self, line: impl AsRef<str>) {
        self.err.extend_from_slice(line.as_ref().as_bytes());
        self.err.push(b'\n');
    }
}

enum StdinSrc {
    Empty,
    Rx(mpsc::Receiver<Bytes>),
    Data(Vec<u8>),
}

/// Where a command reads: the shell's standard input, or a pipe's or file's content.
enum Input {
    Shared,
    Data(Vec<u8>),
}

// ---------------------------------------------------------------------------------------
// Parsing.

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Lit(String, bool),
    Var(String, Option<(bool, String)>, bool),
}

type Word = Vec<Part>;

#[derive(Clone, Debug, PartialEq, Eq)]
enum RedirKind {
    /// `>` (truncate) or `>>` (append).
    Out(bool),
    /// `<`.
    In,
    /// `N>&M`.
    Dup(u8),
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Redir {
    fd: u8,
    kind: RedirKind,
    target: Word,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Command {
    words: Vec<Word>,
    redirs: Vec<Redir>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Pipeline {
    negate: bool,
    cmds: Vec<Command>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Semi,
    And,
    Or,
    Pipe,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct AndOr {
    first: Pipeline,
    rest: Vec<(bool, Pipeline)>,
}

#[derive(Debug, PartialEq, Eq)]
enum Tok {
    Word(Word),
    Op(Op),
    Redir(u8, RedirKind),
}

/// Words that open compound commands this shell does not run.
const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
    "function", "select", "{", "}", "((", "[[",
];

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

struct Lexer {
    chars: Vec<char>,
    i: usize,
    toks: Vec<Tok>,
    word: Word,
    in_word: bool,
}

fn unsupported(what: &str) -> String {
    format!("syntax error: {what} is not supported by kruise-sim's shell")
}

impl Lexer {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.i + ahead).copied()
    }

    fn lit(&mut self, c: char, quoted: bool) {
        self.in_word = true;
        if let Some(Part::Lit(s, q)) = self.word.last_mut()
            && *q == quoted
        {
            s.push(c);
            return;
        }
        self.word.push(Part::Lit(c.to_string(), quoted));
    }

    fn end_word(&mut self) {
        if self.in_word {
            self.toks.push(Tok::Word(std::mem::take(&mut self.word)));
            self.in_word = false;
        }
    }

    /// The digits of the word being read, if it is only digits: a redirection's fd.
    fn fd_prefix(&mut self) -> Option<u8> {
        match self.word.as_slice() {
            [Part::Lit(s, false)] if s.len() == 1 && s.chars().all(|c| c.is_ascii_digit()) => {
                let fd = s.parse().ok()?;
                self.word.clear();
                self.in_word = false;
                Some(fd)
            }
            _ => None,
        }
    }

    /// `$…` at `self.i` (just past the `$`).
    fn dollar(&mut self, quoted: bool) -> Result<(), String> {
        match self.peek(0) {
            Some('{') => {
                self.i += 1;
                let mut body = String::new();
                loop {
                    match self.peek(0) {
                        Some('}') => {
                            self.i += 1;
                            break;
                        }
                        Some(c) => {
                            body.push(c);
                            self.i += 1;
                        }
                        None => return Err("syntax error: missing '}'".into()),
                    }
                }
                let (name, default) = if let Some((n, d)) = body.split_once(":-") {
                    (n.to_owned(), Some((true, d.to_owned())))
                } else if let Some((n, d)) = body.split_once('-').filter(|(n, _)| is_name(n)) {
                    (n.to_owned(), Some((false, d.to_owned())))
                } else {
                    (body, None)
                };
                if !(is_name(&name) || is_special(&name)) {
                    return Err(format!("syntax error: bad substitution: ${{{name}}}"));
                }
                self.in_word = true;
                self.word.push(Part::Var(name, default, quoted));
            }
            Some('(') => return Err(unsupported("command substitution $(...)")),
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                let mut name = String::new();
                while let Some(c) = self.peek(0).filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                {
                    name.push(c);
                    self.i += 1;
                }
                self.in_word = true;
                self.word.push(Part::Var(name, None, quoted));
            }
            Some(c) if c.is_ascii_digit() || "?#@*$!-".contains(c) => {
                self.i += 1;
                self.in_word = true;
                self.word.push(Part::Var(c.to_string(), None, quoted));
            }
            _ => self.lit('$', quoted),
        }
        Ok(())
    }

    fn run(mut self) -> Result<Vec<Tok>, String> {
        while let Some(c) = self.peek(0) {
            self.i += 1;
            match c {
                ' ' | '\t' | '\r' => self.end_word(),
                '\n' | ';' => {
                    self.end_word();
                    self.toks.push(Tok::Op(Op::Semi));
                }
                '&' => {
                    self.end_word();
                    if self.peek(0) == Some('&') {
                        self.i += 1;
                        self.toks.push(Tok::Op(Op::And));
                    } else {
                        self.toks.push(Tok::Op(Op::Semi));
                    }
                }
                '|' => {
                    self.end_word();
                    if self.peek(0) == Some('|') {
                        self.i += 1;
                        self.toks.push(Tok::Op(Op::Or));
                    } else {
                        self.toks.push(Tok::Op(Op::Pipe));
                    }
                }
                '>' | '<' => {
                    let fd = self.fd_prefix();
                    self.end_word();
                    let kind = if c == '<' {
                        match self.peek(0) {
                            Some('<') => return Err(unsupported("a here-document")),
                            Some('&') => return Err(unsupported("<&")),
                            _ => RedirKind::In,
                        }
                    } else {
                        match self.peek(0) {
                            Some('>') => {
                                self.i += 1;
                                RedirKind::Out(true)
                            }
                            Some('|') => {
                                self.i += 1;
                                RedirKind::Out(false)
                            }
                            Some('&') => {
                                self.i += 1;
                                match self.peek(0) {
                                    Some(d @ '0'..='9') => {
                                        self.i += 1;
                                        RedirKind::Dup(d as u8 - b'0')
                                    }
                                    _ => return Err(unsupported(">& without a descriptor")),
                                }
                            }
                            _ => RedirKind::Out(false),
                        }
                    };
                    let default = if c == '<' { 0 } else { 1 };
                    self.toks.push(Tok::Redir(fd.unwrap_or(default), kind));
                }
                '#' if !self.in_word => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.i += 1;
                    }
                }
                '\'' => {
                    self.in_word = true;
                    let mut s = String::new();
                    loop {
                        match self.peek(0) {
                            Some('\'') => {
                                self.i += 1;
                                break;
                            }
                            Some(c) => {
                                s.push(c);
                                self.i += 1;
                            }
                            None => return Err("syntax error: unterminated quoted string".into()),
                        }
                    }
                    self.word.push(Part::Lit(s, true));
                }
                '"' => {
                    self.in_word = true;
                    self.word.push(Part::Lit(String::new(), true));
                    loop {
                        match self.peek(0) {
                            Some('"') => {
                                self.i += 1;
                                break;
                            }
                            Some('\\') => {
                                self.i += 1;
                                match self.peek(0) {
                                    Some(e @ ('"' | '\\' | '$' | '`')) => {
                                        self.i += 1;
                                        self.lit(e, true);
                                    }
                                    Some('\n') => self.i += 1,
                                    _ => self.lit('\\', true),
                                }
                            }
                            Some('$') => {
                                self.i += 1;
                                self.dollar(true)?;
                            }
                            Some('`') => return Err(unsupported("command substitution `...`")),
                            Some(c) => {
                                self.i += 1;
                                self.lit(c, true);
                            }
                            None => return Err("syntax error: unterminated quoted string".into()),
                        }
                    }
                }
                '\\' => match self.peek(0) {
                    Some('\n') => self.i += 1,
                    Some(e) => {
                        self.i += 1;
                        self.lit(e, true);
                    }
                    None => self.lit('\\', false),
                },
                '$' => self.dollar(false)?,
                '`' => return Err(unsupported("command substitution `...`")),
                '(' | ')' => return Err(unsupported("a ( ... ) group")),
                c => self.lit(c, false),
            }
        }
        self.end_word();
        Ok(self.toks)
    }
}

fn is_special(name: &str) -> bool {
    matches!(name, "?" | "#" | "@" | "*" | "$" | "!" | "-")
        || (name.len() == 1 && name.chars().all(|c| c.is_ascii_digit()))
}

/// The literal text of a word with no quotes and expansions, if it is one.
fn plain(word: &Word) -> Option<&str> {
    match word.as_slice() {
        [Part::Lit(s, false)] => Some(s),
        _ => None,
    }
}

fn op_name(op: Op) -> &'static str {
    match op {
        Op::Semi => ";",
        Op::And => "&&",
        Op::Or => "||",
        Op::Pipe => "|",
    }
}

/// Parses a script.
fn parse(script: &str) -> Result<Vec<AndOr>, String> {
    let lexer = Lexer {
        chars: script.chars().collect(),
        i: 0,
        toks: Vec::new(),
        word: Vec::new(),
        in_word: false,
    };
    let toks = lexer.run()?;
    let mut list: Vec<AndOr> = Vec::new();
    let mut cur: Option<AndOr> = None;
    let mut pipe = Pipeline::default();
    let mut cmd = Command::default();
    // What joins the pipeline being read to the one before it in `cur`.
    let mut joined_by: Option<bool> = None;
    let mut toks = toks.into_iter().peekable();
    let finish_pipeline =
        |pipe: &mut Pipeline, cur: &mut Option<AndOr>, joined_by: Option<bool>| {
            let p = std::mem::take(pipe);
            match (cur.as_mut(), joined_by) {
                (Some(c), Some(and)) => c.rest.push((and, p)),
                _ => *cur = Some(AndOr { first: p, rest: Vec::new() }),
            }
        };
    while let Some(tok) = toks.next() {
        match tok {
            Tok::Word(w) => {
                if cmd.words.is_empty()
                    && cmd.redirs.is_empty()
                    && let Some(s) = plain(&w)
                {
                    if s == "!" && pipe.cmds.is_empty() && !pipe.negate {
                        pipe.negate = true;
                        continue;
                    }
                    if RESERVED.contains(&s) {
                        return Err(unsupported(&format!("\"{s}\"")));
                    }
                }
                cmd.words.push(w);
            }
            Tok::Redir(fd, RedirKind::Dup(to)) => {
                cmd.redirs.push(Redir { fd, kind: RedirKind::Dup(to), target: Vec::new() });
            }
            Tok::Redir(fd, kind) => match toks.next() {
                Some(Tok::Word(target)) => cmd.redirs.push(Redir { fd, kind, target }),
                Some(Tok::Op(op)) => {
                    return Err(format!("syntax error: unexpected \"{}\"", op_name(op)));
                }
                Some(Tok::Redir(..)) => return Err("syntax error: unexpected redirection".into()),
                None => return Err("syntax error: unexpected newline".into()),
            },
            Tok::Op(op) => {
                let empty = cmd.words.is_empty() && cmd.redirs.is_empty();
                if empty {
                    // `;` may end an empty line; nothing else may follow nothing.
                    if op == Op::Semi && pipe.cmds.is_empty() && !pipe.negate && joined_by.is_none()
                    {
                        continue;
                    }
                    return Err(format!("syntax error: unexpected \"{}\"", op_name(op)));
                }
                pipe.cmds.push(std::mem::take(&mut cmd));
                match op {
                    Op::Pipe => {}
                    Op::And | Op::Or => {
                        finish_pipeline(&mut pipe, &mut cur, joined_by);
                        joined_by = Some(op == Op::And);
                        // A new line may follow `&&` and `||`.
                        while toks.peek() == Some(&Tok::Op(Op::Semi)) {
                            toks.next();
                        }
                    }
                    Op::Semi => {
                        finish_pipeline(&mut pipe, &mut cur, joined_by);
                        joined_by = None;
                        list.extend(cur.take());
                    }
                }
            }
        }
    }
    if cmd.words.is_empty() && cmd.redirs.is_empty() {
        if !pipe.cmds.is_empty() || pipe.negate || joined_by.is_some() {
            return Err("syntax error: unexpected end of file".into());
        }
    } else {
        pipe.cmds.push(cmd);
        finish_pipeline(&mut pipe, &mut cur, joined_by);
    }
    list.extend(cur.take());
    Ok(list)
}

// ---------------------------------------------------------------------------------------
// Running.

/// Where a command's output goes.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Target {
    /// The shell's standard output (or the pipe).
    Out,
    /// The shell's standard error.
    Err,
    /// A file (appended to: it was truncated when opened).
    File(String),
}

type BoxFut<'s, T> = Pin<Box<dyn Future<Output = T> + Send + 's>>;

struct Sh<'a> {
    c: &'a Container,
    /// The exported environment, in order.
    env: Vec<(String, String)>,
    /// Variables not exported.
    vars: Vec<(String, String)>,
    /// `$0`, `$1`, ...
    args: Vec<String>,
    cwd: String,
    status: i32,
    exited: Option<i32>,
    errexit: bool,
    /// Running a script (builtins exist, errors of builtins say `sh:`).
    in_shell: bool,
    /// The shell `exec` made and nothing ran in yet: `sh -c` runs in it, streaming.
    top: bool,
    depth: usize,
    stdin: StdinSrc,
    emit: Emit,
}

fn fs_call<R>(fs: &dyn FileSystem, f: impl FnOnce(&mut Fs) -> R) -> Option<R> {
    let mut f = Some(f);
    let mut out = None;
    fs.with(&mut |t| {
        if let Some(f) = f.take() {
            out = Some(f(t));
        }
    });
    out
}

/// Matches a glob (`*`, `?`) against a name, in linear time (the last `*` backtracks).
fn glob_match(pattern: &[char], name: &[char]) -> bool {
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(c) if *c == '?' || *c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p.min(pattern.len())..].iter().all(|c| *c == '*')
}

fn parse_int(s: &str) -> Option<i64> {
    s.trim().parse::<i64>().ok()
}

/// `sleep`'s argument: seconds, or `None` for ever.
fn sleep_arg(s: &str) -> Result<Option<f64>, ()> {
    let (num, mult) = match s.chars().last() {
        Some('s') => (&s[..s.len() - 1], 1.0),
        Some('m') => (&s[..s.len() - 1], 60.0),
        Some('h') => (&s[..s.len() - 1], 3600.0),
        Some('d') => (&s[..s.len() - 1], 86400.0),
        _ => (s, 1.0),
    };
    if matches!(s, "inf" | "infinity") {
        return Ok(None);
    }
    if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(());
    }
    let v: f64 = num.parse().map_err(|_| ())?;
    let v = v * mult;
    if v.is_finite() { Ok(Some(v)) } else { Ok(None) }
}

/// `echo -e`'s and `printf`'s backslash escapes; `false` when `\c` stopped the output.
fn unescape(s: &str, out: &mut Vec<u8>) -> bool {
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut b = [0; 4];
            out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            continue;
        }
        match chars.next() {
            Some('n') => out.push(b'\n'),
            Some('t') => out.push(b'\t'),
            Some('r') => out.push(b'\r'),
            Some('a') => out.push(7),
            Some('b') => out.push(8),
            Some('f') => out.push(12),
            Some('v') => out.push(11),
            Some('e') => out.push(27),
            Some('\\') => out.push(b'\\'),
            Some('c') => return false,
            Some('0') => {
                let mut v: u32 = 0;
                for _ in 0..3 {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push((v & 0xff) as u8);
            }
            Some(other) => {
                out.push(b'\\');
                let mut b = [0; 4];
                out.extend_from_slice(other.encode_utf8(&mut b).as_bytes());
            }
            None => out.push(b'\\'),
        }
    }
    true
}

impl<'a> Sh<'a> {
    fn new(c: &'a Container, stdin: StdinSrc, emit: Emit, depth: usize) -> Sh<'a> {
        Sh {
            c,
            env: c.env.clone(),
            vars: Vec::new(),
            args: vec!["sh".to_owned()],
            cwd: "/".to_owned(),
            status: 0,
            exited: None,
            errexit: false,
            in_shell: false,
            top: false,
            depth,
            stdin,
            emit,
        }
    }

    fn lookup(&self, name: &str) -> Option<String> {
        match name {
            "?" => return Some(self.status.to_string()),
            "#" => return Some(self.args.len().saturating_sub(1).to_string()),
            "@" | "*" => {
                return Some(self.args.iter().skip(1).cloned().collect::<Vec<_>>().join(" "));
            }
            "$" => return Some("1".to_owned()),
            "!" | "-" => return Some(String::new()),
            _ => {}
        }
        if let Ok(i) = name.parse::<usize>() {
            return self.args.get(i).cloned();
        }
        self.vars.iter().chain(self.env.iter()).find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    fn set_var(&mut self, name: &str, value: String, export: bool) {
        if let Some(e) = self.env.iter_mut().find(|(k, _)| k == name) {
            e.1 = value;
            return;
        }
        if export {
            self.vars.retain(|(k, _)| k != name);
            self.env.push((name.to_owned(), value));
            return;
        }
        match self.vars.iter_mut().find(|(k, _)| k == name) {
            Some(e) => e.1 = value,
            None => self.vars.push((name.to_owned(), value)),
        }
    }

    /// The value of `$name` with `${name:-default}` applied.
    fn var_value(&self, name: &str, default: &Option<(bool, String)>) -> String {
        let v = self.lookup(name);
        match (default, v) {
            (Some((true, d)), v) if v.as_deref().is_none_or(str::is_empty) => d.clone(),
            (Some((false, d)), None) => d.clone(),
            (_, v) => v.unwrap_or_default(),
        }
    }

    /// A word's fields after expansion (and globbing).
    fn expand(&self, word: &Word) -> Vec<String> {
        let mut fields: Vec<String> = Vec::new();
        let mut cur = String::new();
        let mut has = false;
        let mut globbable = true;
        for part in word {
            match part {
                Part::Lit(s, quoted) => {
                    cur.push_str(s);
                    has = true;
                    globbable &= !quoted;
                }
                Part::Var(name, _, true) if name == "@" => {
                    let args: Vec<String> = self.args.iter().skip(1).cloned().collect();
                    for (i, a) in args.iter().enumerate() {
                        if i > 0 {
                            fields.push(std::mem::take(&mut cur));
                        }
                        cur.push_str(a);
                        has = true;
                    }
                    globbable = false;
                }
                Part::Var(name, default, true) => {
                    cur.push_str(&self.var_value(name, default));
                    has = true;
                    globbable = false;
                }
                Part::Var(name, default, false) => {
                    let v = self.var_value(name, default);
                    let starts_blank = v.starts_with([' ', '\t', '\n']);
                    let ends_blank = v.ends_with([' ', '\t', '\n']);
                    let pieces: Vec<&str> =
                        v.split([' ', '\t', '\n']).filter(|p| !p.is_empty()).collect();
                    if pieces.is_empty() {
                        if starts_blank && has {
                            fields.push(std::mem::take(&mut cur));
                            has = false;
                        }
                        continue;
                    }
                    if starts_blank && has {
                        fields.push(std::mem::take(&mut cur));
                    }
                    for (i, p) in pieces.iter().enumerate() {
                        if i > 0 {
                            fields.push(std::mem::take(&mut cur));
                        }
                        cur.push_str(p);
                    }
                    has = true;
                    if ends_blank {
                        fields.push(std::mem::take(&mut cur));
                        has = false;
                    }
                }
            }
        }
        if has {
            fields.push(cur);
        }
        if !globbable {
            return fields;
        }
        fields.into_iter().flat_map(|f| self.glob(f)).collect()
    }

    /// The paths a field with `*` or `?` in its last part matches (itself when none).
    fn glob(&self, field: String) -> Vec<String> {
        if !field.contains(['*', '?']) {
            return vec![field];
        }
        let (dir, pattern) = match field.rfind('/') {
            Some(i) => (&field[..=i], &field[i + 1..]),
            None => ("", field.as_str()),
        };
        if dir.contains(['*', '?']) || pattern.is_empty() {
            return vec![field];
        }
        let abs = fs::normalize(&self.cwd, if dir.is_empty() { "." } else { dir });
        let pat: Vec<char> = pattern.chars().collect();
        let names =
            fs_call(self.c.fs.as_ref(), |t| t.list(&abs).unwrap_or_default()).unwrap_or_default();
        let mut matched: Vec<String> = names
            .into_iter()
            .map(|(n, _)| n)
            .filter(|n| {
                (!n.starts_with('.') || pattern.starts_with('.'))
                    && glob_match(&pat, &n.chars().collect::<Vec<_>>())
            })
            .map(|n| format!("{dir}{n}"))
            .collect();
        if matched.is_empty() {
            return vec![field];
        }
        matched.sort();
        matched
    }

    /// The value of an assignment word `NAME=…`, if it is one.
    fn assignment(&self, word: &Word) -> Option<(String, String)> {
        let Some(Part::Lit(first, false)) = word.first() else { return None };
        let (name, rest) = first.split_once('=')?;
        if !is_name(name) {
            return None;
        }
        let mut value = rest.to_owned();
        for part in &word[1..] {
            match part {
                Part::Lit(s, _) => value.push_str(s),
                Part::Var(n, d, _) => value.push_str(&self.var_value(n, d)),
            }
        }
        Some((name.to_owned(), value))
    }

    fn prefix(&self, name: &str) -> String {
        if self.in_shell { "sh".to_owned() } else { name.to_owned() }
    }

    async fn read_input(&mut self, input: &mut Input) -> Vec<u8> {
        match input {
            Input::Data(d) => std::mem::take(d),
            Input::Shared => match std::mem::replace(&mut self.stdin, StdinSrc::Empty) {
                StdinSrc::Empty => Vec::new(),
                StdinSrc::Data(d) => d,
                StdinSrc::Rx(mut rx) => {
                    let mut buf = Vec::new();
                    while let Some(chunk) = rx.recv().await {
                        let room = MAX_OUTPUT.saturating_sub(buf.len());
                        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
                    }
                    buf
                }
            },
        }
    }

    /// Runs a parsed script.
    async fn run_list(&mut self, list: &[AndOr]) {
        self.top = false;
        for item in list {
            if self.exited.is_some() {
                return;
            }
            let last_ran = self.run_and_or(item).await;
            if self.errexit && self.status != 0 && last_ran && self.exited.is_none() {
                self.exited = Some(self.status);
            }
        }
    }

    /// Runs `a && b || c`; whether the last pipeline ran (for `set -e`).
    async fn run_and_or(&mut self, item: &AndOr) -> bool {
        self.run_pipeline(&item.first).await;
        let mut last_ran = item.rest.is_empty();
        for (i, (and, p)) in item.rest.iter().enumerate() {
            if self.exited.is_some() {
                return false;
            }
            if (*and && self.status != 0) || (!*and && self.status == 0) {
                continue;
            }
            self.run_pipeline(p).await;
            last_ran = i + 1 == item.rest.len();
        }
        last_ran
    }

    async fn run_pipeline(&mut self, p: &Pipeline) {
        let mut input = Input::Shared;
        let n = p.cmds.len();
        for (i, cmd) in p.cmds.iter().enumerate() {
            if self.exited.is_some() {
                return;
            }
            let last = i + 1 == n;
            let out = self.run_command(cmd, input, !last).await;
            input = Input::Data(out);
        }
        if p.negate {
            self.status = i32::from(self.status == 0);
        }
    }

    /// Runs one command; its standard output when `capture` (a pipe's left side).
    async fn run_command(&mut self, cmd: &Command, mut input: Input, capture: bool) -> Vec<u8> {
        let mut captured = Vec::new();
        // Assignments before the command word.
        let mut assigns = Vec::new();
        let mut words = cmd.words.iter().peekable();
        while let Some(w) = words.peek() {
            match self.assignment(w) {
                Some(a) => {
                    assigns.push(a);
                    words.next();
                }
                None => break,
            }
        }
        let argv: Vec<String> = words.flat_map(|w| self.expand(w)).collect();
        // Redirections, in order.
        let mut targets = [Target::Out, Target::Out, Target::Err];
        for r in &cmd.redirs {
            if let RedirKind::Dup(to) = r.kind {
                let t = targets[usize::from(to.min(2))].clone();
                targets[usize::from(r.fd.min(2))] = t;
                continue;
            }
            let fields = self.expand(&r.target);
            let target = match fields.as_slice() {
                [one] => one.clone(),
                _ => {
                    self.emit.put(
                        2,
                        format!("sh: {}: ambiguous redirect\n", fields.join(" ")).into_bytes(),
                    );
                    self.status = 1;
                    return captured;
                }
            };
            let fd = usize::from(r.fd.min(2));
            match &r.kind {
                RedirKind::Dup(_) => {}
                RedirKind::In => {
                    let path = fs::normalize(&self.cwd, &target);
                    let read = fs_call(self.c.fs.as_ref(), |t| t.read(&path).map(<[u8]>::to_vec))
                        .unwrap_or(Err(FsError::NotFound));
                    match read {
                        Ok(data) => input = Input::Data(data),
                        Err(e) => {
                            let why = match e {
                                FsError::NotFound | FsError::NotDir => "no such file".to_owned(),
                                e => e.to_string(),
                            };
                            self.emit
                                .put(2, format!("sh: can't open {target}: {why}\n").into_bytes());
                            self.status = 1;
                            return captured;
                        }
                    }
                }
                RedirKind::Out(append) => {
                    let path = fs::normalize(&self.cwd, &target);
                    let append = *append;
                    let opened = fs_call(self.c.fs.as_ref(), |t| t.write(&path, b"", append))
                        .unwrap_or(Err(FsError::NotFound));
                    if let Err(e) = opened {
                        let why = match e {
                            FsError::NotFound | FsError::NotDir => {
                                "nonexistent directory".to_owned()
                            }
                            e => e.to_string(),
                        };
                        self.emit
                            .put(2, format!("sh: can't create {target}: {why}\n").into_bytes());
                        self.status = 1;
                        return captured;
                    }
                    targets[fd] = Target::File(path);
                }
            }
        }
        let res = if argv.is_empty() {
            for (k, v) in assigns {
                self.set_var(&k, v, false);
            }
            Res::code(0)
        } else {
            self.run_program(argv, input, assigns).await
        };
        self.status = res.code;
        for (fd, data) in [(1usize, res.out), (2, res.err)] {
            if data.is_empty() {
                continue;
            }
            match &targets[fd] {
                Target::Out if capture => captured.extend_from_slice(&data),
                Target::Out => self.emit.put(1, data),
                Target::Err => self.emit.put(2, data),
                Target::File(path) => {
                    let path = path.clone();
                    let written = fs_call(self.c.fs.as_ref(), |t| t.write(&path, &data, true))
                        .unwrap_or(Err(FsError::NotFound));
                    if let Err(e) = written {
                        self.emit.put(2, format!("sh: write error: {e}\n").into_bytes());
                        self.status = 1;
                    }
                }
            }
        }
        captured
    }

    /// Runs a program or builtin with `argv`, extra environment `assigns` and `input`.
    fn run_program(
        &mut self,
        argv: Vec<String>,
        input: Input,
        assigns: Vec<(String, String)>,
    ) -> BoxFut<'_, Res> {
        Box::pin(async move {
            let mut input = input;
            let Some(first) = argv.first() else { return Res::code(0) };
            let name = basename(first).to_owned();
            let args = &argv[1..];
            let known = is_program(&argv) || (self.in_shell && BUILTINS.contains(&first.as_str()));
            if !known {
                return Res::fail(127, format!("sh: {first}: not found"));
            }
            match name.as_str() {
                "busybox" => match args.first() {
                    None => Res {
                        out: b"BusyBox v1.36.1 multi-call binary.\n".to_vec(),
                        ..Res::default()
                    },
                    Some(_) => self.run_program(args.to_vec(), input, assigns).await,
                },
                "true" | ":" => Res::code(0),
                "false" => Res::code(1),
                "echo" => {
                    let mut newline = true;
                    let mut escapes = false;
                    let mut rest = args;
                    while let Some((a, more)) = rest.split_first() {
                        if a.len() > 1
                            && a.starts_with('-')
                            && a[1..].chars().all(|c| "neE".contains(c))
                        {
                            for c in a[1..].chars() {
                                match c {
                                    'n' => newline = false,
                                    'e' => escapes = true,
                                    _ => escapes = false,
                                }
                            }
                            rest = more;
                        } else {
                            break;
                        }
                    }
                    let mut out = Vec::new();
                    let text = rest.join(" ");
                    if escapes {
                        if !unescape(&text, &mut out) {
                            return Res { out, ..Res::default() };
                        }
                    } else {
                        out.extend_from_slice(text.as_bytes());
                    }
                    if newline {
                        out.push(b'\n');
                    }
                    Res { out, ..Res::default() }
                }
                "printf" => self.printf(args),
                "test" | "[" => self.test(&name, args),
                "pwd" => Res { out: format!("{}\n", self.cwd).into_bytes(), ..Res::default() },
                "whoami" => Res { out: b"root\n".to_vec(), ..Res::default() },
                "id" => Res {
                    out: b"uid=0(root) gid=0(root) groups=0(root)\n".to_vec(),
                    ..Res::default()
                },
                "hostname" if args.is_empty() => {
                    Res { out: format!("{}\n", self.c.hostname).into_bytes(), ..Res::default() }
                }
                "hostname" => Res::fail(1, "hostname: sethostname: Operation not permitted".into()),
                "env" => self.env_cmd(args, input, assigns).await,
                "printenv" => {
                    let env = self.env_with(&assigns);
                    let names: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
                    if names.is_empty() {
                        let out = env.iter().map(|(k, v)| format!("{k}={v}\n")).collect::<String>();
                        return Res { out: out.into_bytes(), ..Res::default() };
                    }
                    let mut res = Res::default();
                    for n in names {
                        match env.iter().find(|(k, _)| k == n) {
                            Some((_, v)) => {
                                res.out.extend_from_slice(v.as_bytes());
                                res.out.push(b'\n');
                            }
                            None => res.code = 1,
                        }
                    }
                    res
                }
                "sleep" => {
                    if args.is_empty() {
                        return Res::fail(1, "Usage: sleep [N]...".into());
                    }
                    let mut total = 0.0;
                    let mut forever = false;
                    for a in args {
                        match sleep_arg(a) {
                            Ok(Some(s)) => total += s,
                            Ok(None) => forever = true,
                            Err(()) => return Res::fail(1, format!("sleep: invalid number '{a}'")),
                        }
                    }
                    match Duration::try_from_secs_f64(total) {
                        Ok(d) if !forever => tokio::time::sleep(d).await,
                        _ => std::future::pending::<()>().await,
                    }
                    Res::code(0)
                }
                "cat" => {
                    let mut res = Res::default();
                    let files: Vec<&String> =
                        args.iter().filter(|a| !(a.len() > 1 && a.starts_with('-'))).collect();
                    if files.is_empty() {
                        res.out = self.read_input(&mut input).await;
                        return res;
                    }
                    for f in files {
                        if f == "-" {
                            let data = self.read_input(&mut input).await;
                            res.out.extend_from_slice(&data);
                            continue;
                        }
                        let path = fs::normalize(&self.cwd, f);
                        let read =
                            fs_call(self.c.fs.as_ref(), |t| t.read(&path).map(<[u8]>::to_vec))
                                .unwrap_or(Err(FsError::NotFound));
                        match read {
                            Ok(data) => res.out.extend_from_slice(&data),
                            Err(FsError::IsDir) => {
                                res.say("cat: read error: Is a directory");
                                res.code = 1;
                            }
                            Err(e) => {
                                res.say(format!("cat: can't open '{f}': {e}"));
                                res.code = 1;
                            }
                        }
                    }
                    res
                }
                "touch" => {
                    let mut create = true;
                    let mut files = Vec::new();
                    let mut it = args.iter();
                    while let Some(a) = it.next() {
                        match a.as_str() {
                            "-c" => create = false,
                            "-d" | "-t" | "-r" => {
                                it.next();
                            }
                            a if a.len() > 1 && a.starts_with('-') => {}
                            _ => files.push(a),
                        }
                    }
                    if files.is_empty() {
                        return Res::fail(
                            1,
                            "Usage: touch [-c] [-d DATE] [-t DATE] [-r FILE] FILE...".into(),
                        );
                    }
                    let mut res = Res::default();
                    for f in files {
                        let path = fs::normalize(&self.cwd, f);
                        let done = fs_call(self.c.fs.as_ref(), |t| {
                            if create { t.touch(&path) } else { Ok(()) }
                        })
                        .unwrap_or(Err(FsError::NotFound));
                        if let Err(e) = done {
                            res.say(format!("touch: {f}: {e}"));
                            res.code = 1;
                        }
                    }
                    res
                }
                "rm" => {
                    let (mut force, mut recursive) = (false, false);
                    let mut files = Vec::new();
                    let mut opts = true;
                    for a in args {
                        if opts && a == "--" {
                            opts = false;
                        } else if opts && a.len() > 1 && a.starts_with('-') {
                            for c in a[1..].chars() {
                                match c {
                                    'f' => force = true,
                                    'r' | 'R' => recursive = true,
                                    'i' | 'v' => {}
                                    other => {
                                        return Res::fail(
                                            1,
                                            format!(
                                                "rm: invalid option -- '{other}'\nUsage: rm [-irf] FILE..."
                                            ),
                                        );
                                    }
                                }
                            }
                        } else {
                            files.push(a);
                        }
                    }
                    if files.is_empty() {
                        return if force {
                            Res::code(0)
                        } else {
                            Res::fail(1, "Usage: rm [-irf] FILE...".into())
                        };
                    }
                    let mut res = Res::default();
                    for f in files {
                        let path = fs::normalize(&self.cwd, f);
                        if f.rsplit('/').next().is_some_and(|b| b == "." || b == "..") {
                            res.say("rm: can't remove '.' or '..'");
                            res.code = 1;
                            continue;
                        }
                        let done = fs_call(self.c.fs.as_ref(), |t| t.remove(&path, recursive))
                            .unwrap_or(Err(FsError::NotFound));
                        match done {
                            Ok(()) => {}
                            Err(FsError::NotFound) if force => {}
                            Err(e) => {
                                res.say(format!("rm: can't remove '{f}': {e}"));
                                res.code = 1;
                            }
                        }
                    }
                    res
                }
                "mkdir" => {
                    let mut parents = false;
                    let mut dirs = Vec::new();
                    let mut it = args.iter();
                    while let Some(a) = it.next() {
                        match a.as_str() {
                            "-m" => {
                                it.next();
                            }
                            a if a.len() > 1 && a.starts_with('-') => {
                                parents |= a.contains('p');
                            }
                            _ => dirs.push(a),
                        }
                    }
                    if dirs.is_empty() {
                        return Res::fail(1, "Usage: mkdir [-m MODE] [-p] DIRECTORY...".into());
                    }
                    let mut res = Res::default();
                    for d in dirs {
                        let path = fs::normalize(&self.cwd, d);
                        let done = fs_call(self.c.fs.as_ref(), |t| t.mkdir(&path, parents))
                            .unwrap_or(Err(FsError::NotFound));
                        if let Err(e) = done {
                            res.say(format!("mkdir: can't create directory '{d}': {e}"));
                            res.code = 1;
                        }
                    }
                    res
                }
                "ls" => self.ls(args),
                "cd" => {
                    let target = match args.first() {
                        Some(t) => t.clone(),
                        None => self.lookup("HOME").unwrap_or_else(|| "/".into()),
                    };
                    let path = fs::normalize(&self.cwd, &target);
                    match fs_call(self.c.fs.as_ref(), |t| t.stat(&path)).flatten() {
                        Some(Kind::Dir) => {
                            self.cwd = path;
                            Res::code(0)
                        }
                        Some(Kind::File) => {
                            Res::fail(2, format!("sh: cd: can't cd to {target}: Not a directory"))
                        }
                        None => Res::fail(
                            2,
                            format!("sh: cd: can't cd to {target}: No such file or directory"),
                        ),
                    }
                }
                "exit" => {
                    let code = match args.first() {
                        None => self.status,
                        Some(a) => match parse_int(a) {
                            Some(n) => (n & 0xff) as i32,
                            None => {
                                self.exited = Some(2);
                                return Res::fail(2, format!("sh: exit: Illegal number: {a}"));
                            }
                        },
                    };
                    self.exited = Some(code);
                    Res::code(code)
                }
                "export" => {
                    for a in args {
                        match a.split_once('=') {
                            Some((k, v)) if is_name(k) => self.set_var(k, v.to_owned(), true),
                            // Exported once it has a value.
                            None if is_name(a) => {
                                if let Some(v) = self.lookup(a) {
                                    self.set_var(a, v, true);
                                }
                            }
                            _ => {
                                return Res::fail(
                                    1,
                                    format!(
                                        "{}: export: bad variable name '{a}'",
                                        self.prefix("export")
                                    ),
                                );
                            }
                        }
                    }
                    Res::code(0)
                }
                "unset" => {
                    for a in args {
                        self.vars.retain(|(k, _)| k != a);
                        self.env.retain(|(k, _)| k != a);
                    }
                    Res::code(0)
                }
                "set" => {
                    for a in args {
                        match a.as_str() {
                            "-e" => self.errexit = true,
                            "+e" => self.errexit = false,
                            _ => {}
                        }
                    }
                    Res::code(0)
                }
                "wait" => Res::code(0),
                "exec" => {
                    if args.is_empty() {
                        return Res::code(0);
                    }
                    let res = self.run_program(args.to_vec(), input, assigns).await;
                    self.exited = Some(res.code);
                    res
                }
                "sh" | "bash" | "ash" | "dash" => self.shell(args, input).await,
                _ => Res::fail(127, format!("sh: {first}: not found")),
            }
        })
    }

    /// The environment with a command's own assignments.
    fn env_with(&self, assigns: &[(String, String)]) -> Vec<(String, String)> {
        let mut env = self.env.clone();
        for (k, v) in assigns {
            match env.iter_mut().find(|(n, _)| n == k) {
                Some(e) => e.1 = v.clone(),
                None => env.push((k.clone(), v.clone())),
            }
        }
        env
    }

    async fn env_cmd(
        &mut self,
        args: &[String],
        input: Input,
        assigns: Vec<(String, String)>,
    ) -> Res {
        let mut env = self.env_with(&assigns);
        let mut rest = args;
        while let Some((a, more)) = rest.split_first() {
            if a == "-i" || a == "-" {
                env.clear();
            } else if let Some((k, v)) = a.split_once('=').filter(|(k, _)| !k.is_empty()) {
                match env.iter_mut().find(|(n, _)| n == k) {
                    Some(e) => e.1 = v.to_owned(),
                    None => env.push((k.to_owned(), v.to_owned())),
                }
            } else if a.starts_with('-') && a.len() > 1 {
                return Res::fail(1, format!("env: unrecognized option '{a}'"));
            } else {
                break;
            }
            rest = more;
        }
        if rest.is_empty() {
            let out = env.iter().map(|(k, v)| format!("{k}={v}\n")).collect::<String>();
            return Res { out: out.into_bytes(), ..Res::default() };
        }
        if !is_program(rest) {
            return Res::fail(
                127,
                format!("env: can't execute '{}': No such file or directory", rest[0]),
            );
        }
        // The command sees exactly `env`.
        let saved = std::mem::replace(&mut self.env, env);
        let saved_vars = std::mem::take(&mut self.vars);
        let in_shell = std::mem::replace(&mut self.in_shell, false);
        let res = self.run_program(rest.to_vec(), input, Vec::new()).await;
        self.env = saved;
        self.vars = saved_vars;
        self.in_shell = in_shell;
        res
    }

    /// `sh [-e] [-c SCRIPT [NAME [ARG]...]]`: at the top (the command `kubectl exec` or a probe
    /// runs) it runs in this shell, streaming; inside a script, as a child shell.
    async fn shell(&mut self, args: &[String], mut input: Input) -> Res {
        if self.depth >= MAX_DEPTH {
            return Res::fail(2, "sh: too deeply nested".into());
        }
        let mut errexit = false;
        let mut script: Option<String> = None;
        let mut rest = args;
        let mut command_mode = false;
        while let Some((a, more)) = rest.split_first() {
            if a == "--" {
                rest = more;
                break;
            }
            if a.len() > 1 && (a.starts_with('-') || a.starts_with('+')) {
                for c in a[1..].chars() {
                    match c {
                        'c' => command_mode = true,
                        'e' => errexit = a.starts_with('-'),
                        'x' | 'u' | 'f' | 'l' | 'i' | 's' | 'v' => {}
                        other => return Res::fail(2, format!("sh: -{other}: invalid option")),
                    }
                }
                rest = more;
            } else {
                break;
            }
        }
        let mut positional = vec!["sh".to_owned()];
        if command_mode {
            let Some((s, more)) = rest.split_first() else {
                return Res::fail(2, "sh: -c requires an argument".into());
            };
            script = Some(s.clone());
            if let Some((name, more)) = more.split_first() {
                positional = vec![name.clone()];
                positional.extend(more.iter().cloned());
            }
        } else if let Some((file, more)) = rest.split_first() {
            let path = fs::normalize(&self.cwd, file);
            let read = fs_call(self.c.fs.as_ref(), |t| t.read(&path).map(<[u8]>::to_vec))
                .unwrap_or(Err(FsError::NotFound));
            match read {
                Ok(data) => script = Some(String::from_utf8_lossy(&data).into_owned()),
                Err(_) => {
                    return Res::fail(
                        2,
                        format!("sh: can't open '{file}': No such file or directory"),
                    );
                }
            }
            positional = vec![file.clone()];
            positional.extend(more.iter().cloned());
        }
        let script = match script {
            Some(s) => s,
            None => String::from_utf8_lossy(&self.read_input(&mut input).await).into_owned(),
        };
        let parsed = match parse(&script) {
            Ok(p) => p,
            Err(e) => return Res::fail(2, format!("sh: {e}")),
        };
        if std::mem::take(&mut self.top) {
            // The top: run here, so that output streams as it comes.
            self.in_shell = true;
            self.errexit = errexit;
            self.args = positional;
            if let Input::Data(d) = input {
                self.stdin = StdinSrc::Data(d);
            }
            self.run_list(&parsed).await;
            let code = self.exited.unwrap_or(self.status);
            return Res::code(code);
        }
        let stdin = match input {
            Input::Shared => std::mem::replace(&mut self.stdin, StdinSrc::Empty),
            Input::Data(d) => StdinSrc::Data(d),
        };
        let mut sub = Sh::new(self.c, stdin, Emit::default(), self.depth + 1);
        sub.env = self.env.clone();
        sub.cwd = self.cwd.clone();
        sub.in_shell = true;
        sub.errexit = errexit;
        sub.args = positional;
        Box::pin(sub.run_list(&parsed)).await;
        let code = sub.exited.unwrap_or(sub.status);
        if matches!(self.stdin, StdinSrc::Empty) {
            self.stdin = std::mem::replace(&mut sub.stdin, StdinSrc::Empty);
        }
        Res { out: sub.emit.out, err: sub.emit.err, code }
    }

    fn printf(&self, args: &[String]) -> Res {
        let Some((format, mut rest)) = args.split_first() else {
            return Res::fail(1, "Usage: printf FORMAT [ARG]...".into());
        };
        let mut res = Res::default();
        let chars: Vec<char> = format.chars().collect();
        loop {
            let mut consumed = false;
            let mut i = 0;
            let mut text = String::new();
            while i < chars.len() {
                let c = chars[i];
                i += 1;
                if c != '%' {
                    text.push(c);
                    continue;
                }
                // Flags and width are read and ignored.
                while i < chars.len() && "-+ #0123456789.".contains(chars[i]) {
                    i += 1;
                }
                let Some(conv) = chars.get(i).copied() else {
                    text.push('%');
                    break;
                };
                i += 1;
                let mut next = || {
                    consumed = true;
                    match rest.split_first() {
                        Some((a, more)) => {
                            rest = more;
                            a.clone()
                        }
                        None => String::new(),
                    }
                };
                match conv {
                    '%' => text.push('%'),
                    's' => text.push_str(&next()),
                    'b' => {
                        let mut b = Vec::new();
                        unescape(&next(), &mut b);
                        text.push_str(&String::from_utf8_lossy(&b));
                    }
                    'c' => text.extend(next().chars().next()),
                    'd' | 'i' | 'u' | 'x' | 'X' | 'o' => {
                        let a = next();
                        let n = if a.is_empty() {
                            0
                        } else {
                            match parse_int(&a) {
                                Some(n) => n,
                                None => {
                                    res.say(format!("printf: invalid number '{a}'"));
                                    res.code = 1;
                                    0
                                }
                            }
                        };
                        match conv {
                            'x' => text.push_str(&format!("{n:x}")),
                            'X' => text.push_str(&format!("{n:X}")),
                            'o' => text.push_str(&format!("{n:o}")),
                            _ => text.push_str(&n.to_string()),
                        }
                    }
                    other => {
                        text.push('%');
                        text.push(other);
                    }
                }
            }
            if !unescape(&text, &mut res.out) {
                return res;
            }
            if !consumed || rest.is_empty() {
                return res;
            }
        }
    }

    fn test(&self, name: &str, args: &[String]) -> Res {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let args = if name == "[" {
            match args.split_last() {
                Some((&"]", inner)) => inner.to_vec(),
                _ => return Res::fail(2, format!("{}: missing ]", self.prefix("["))),
            }
        } else {
            args
        };
        match self.eval_test(&args) {
            Ok(true) => Res::code(0),
            Ok(false) => Res::code(1),
            Err(e) => Res::fail(2, format!("{}: {e}", self.prefix(name))),
        }
    }

    fn eval_test(&self, args: &[&str]) -> Result<bool, String> {
        // `-o` binds looser than `-a`.
        for op in ["-o", "-a"] {
            if args.len() > 3
                && let Some(i) =
                    args.iter().rposition(|a| *a == op).filter(|i| *i > 0 && *i + 1 < args.len())
            {
                let (l, r) = (&args[..i], &args[i + 1..]);
                return Ok(if op == "-o" {
                    self.eval_test(l)? || self.eval_test(r)?
                } else {
                    self.eval_test(l)? && self.eval_test(r)?
                });
            }
        }
        match args {
            [] => Ok(false),
            [a] => Ok(!a.is_empty()),
            ["!", rest @ ..] => Ok(!self.eval_test(rest)?),
            ["(", inner @ .., ")"] => self.eval_test(inner),
            [op, a] if op.starts_with('-') => self.unary(op, a),
            [a, op, b] => {
                let num = |s: &str| parse_int(s).ok_or_else(|| format!("{s}: bad number"));
                match *op {
                    "=" | "==" => Ok(a == b),
                    "!=" => Ok(a != b),
                    "<" => Ok(a < b),
                    ">" => Ok(a > b),
                    "-eq" => Ok(num(a)? == num(b)?),
                    "-ne" => Ok(num(a)? != num(b)?),
                    "-lt" => Ok(num(a)? < num(b)?),
                    "-le" => Ok(num(a)? <= num(b)?),
                    "-gt" => Ok(num(a)? > num(b)?),
                    "-ge" => Ok(num(a)? >= num(b)?),
                    _ => Err(format!("{op}: unknown operand")),
                }
            }
            _ => Err("syntax error".into()),
        }
    }

    fn unary(&self, op: &str, a: &str) -> Result<bool, String> {
        let path = fs::normalize(&self.cwd, a);
        let stat = || fs_call(self.c.fs.as_ref(), |t| t.stat(&path)).flatten();
        Ok(match op {
            "-n" => !a.is_empty(),
            "-z" => a.is_empty(),
            "-e" | "-r" | "-w" | "-x" => stat().is_some(),
            "-f" => stat() == Some(Kind::File),
            "-d" => stat() == Some(Kind::Dir),
            "-s" => match stat() {
                Some(Kind::Dir) => true,
                Some(Kind::File) => fs_call(self.c.fs.as_ref(), |t| {
                    t.read(&path).map(|d| !d.is_empty()).unwrap_or(false)
                })
                .unwrap_or(false),
                None => false,
            },
            "-L" | "-h" | "-b" | "-c" | "-p" | "-S" | "-t" | "-g" | "-u" | "-k" => false,
            _ => return Err(format!("{op}: unknown operand")),
        })
    }

    fn ls(&self, args: &[String]) -> Res {
        let paths: Vec<&String> =
            args.iter().filter(|a| !(a.len() > 1 && a.starts_with('-'))).collect();
        let dot = ".".to_owned();
        let paths = if paths.is_empty() { vec![&dot] } else { paths };
        let mut res = Res::default();
        let mut files = Vec::new();
        let mut dirs = Vec::new();
        for p in &paths {
            let abs = fs::normalize(&self.cwd, p);
            let listed = fs_call(self.c.fs.as_ref(), |t| match t.stat(&abs) {
                None => Err(FsError::NotFound),
                Some(Kind::File) => Ok(None),
                Some(Kind::Dir) => t.list(&abs).map(Some),
            })
            .unwrap_or(Err(FsError::NotFound));
            match listed {
                Ok(None) => files.push((*p).clone()),
                Ok(Some(entries)) => dirs.push(((*p).clone(), entries)),
                Err(e) => {
                    res.say(format!("ls: {p}: {e}"));
                    res.code = 1;
                }
            }
        }
        files.sort();
        let mut out = String::new();
        for f in &files {
            out.push_str(f);
            out.push('\n');
        }
        let headers = paths.len() > 1;
        for (i, (p, entries)) in dirs.iter().enumerate() {
            if headers {
                if i > 0 || !files.is_empty() {
                    out.push('\n');
                }
                out.push_str(&format!("{p}:\n"));
            }
            for (name, _) in entries {
                out.push_str(name);
                out.push('\n');
            }
        }
        res.out = out.into_bytes();
        res
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Mutex;

    use super::*;

    fn container() -> Container {
        Container {
            env: vec![
                ("PATH".into(), "/bin".into()),
                ("HOSTNAME".into(), "web-0".into()),
                ("GREETING".into(), "hello world".into()),
                ("HOME".into(), "/root".into()),
            ],
            hostname: "web-0".into(),
            fs: Arc::new(Mutex::new(Fs::new("web-0"))),
        }
    }

    fn argv(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| (*s).to_owned()).collect()
    }

    /// `(stdout, stderr, code)` of `argv`.
    async fn run(c: &Container, a: &[&str]) -> (String, String, i32) {
        let o = exec(c, &argv(a), Stdin::Closed, None).await.unwrap();
        (String::from_utf8(o.stdout).unwrap(), String::from_utf8(o.stderr).unwrap(), o.exit_code)
    }

    async fn sh(c: &Container, script: &str) -> (String, String, i32) {
        run(c, &["sh", "-c", script]).await
    }

    fn ok(out: &str) -> (String, String, i32) {
        (out.to_owned(), String::new(), 0)
    }

    #[tokio::test]
    async fn files_commands() {
        let c = container();
        assert_eq!(
            run(&c, &["cat", "/tmp/ready"]).await,
            (String::new(), "cat: can't open '/tmp/ready': No such file or directory\n".into(), 1)
        );
        assert_eq!(run(&c, &["touch", "/tmp/ready"]).await, ok(""));
        assert_eq!(run(&c, &["cat", "/tmp/ready"]).await, ok(""));
        assert_eq!(run(&c, &["test", "-f", "/tmp/ready"]).await, ok(""));
        assert_eq!(run(&c, &["test", "-s", "/tmp/ready"]).await.2, 1);
        assert_eq!(run(&c, &["/bin/rm", "/tmp/ready"]).await, ok(""));
        assert_eq!(run(&c, &["test", "-e", "/tmp/ready"]).await.2, 1);
        assert_eq!(
            run(&c, &["rm", "/tmp/ready"]).await,
            (String::new(), "rm: can't remove '/tmp/ready': No such file or directory\n".into(), 1)
        );
        assert_eq!(run(&c, &["rm", "-f", "/tmp/ready"]).await, ok(""));
        assert_eq!(
            run(&c, &["rm", "/tmp"]).await,
            (String::new(), "rm: can't remove '/tmp': Is a directory\n".into(), 1)
        );
        assert_eq!(
            run(&c, &["touch", "/nope/x"]).await,
            (String::new(), "touch: /nope/x: No such file or directory\n".into(), 1)
        );
        assert_eq!(run(&c, &["mkdir", "-p", "/data/a/b"]).await, ok(""));
        assert_eq!(
            run(&c, &["mkdir", "/data"]).await,
            (String::new(), "mkdir: can't create directory '/data': File exists\n".into(), 1)
        );
        assert_eq!(
            run(&c, &["mkdir", "/x/y"]).await,
            (
                String::new(),
                "mkdir: can't create directory '/x/y': No such file or directory\n".into(),
                1
            )
        );
        assert_eq!(run(&c, &["touch", "/data/f", "/data/a/g"]).await, ok(""));
        assert_eq!(run(&c, &["ls", "/data"]).await, ok("a\nf\n"));
        assert_eq!(run(&c, &["ls", "/data/f"]).await, ok("/data/f\n"));
        assert_eq!(
            run(&c, &["ls", "/nope"]).await,
            (String::new(), "ls: /nope: No such file or directory\n".into(), 1)
        );
        assert_eq!(
            run(&c, &["ls"]).await,
            ok("bin\ndata\ndev\netc\nhome\nproc\nroot\ntmp\nusr\nvar\n")
        );
        assert_eq!(run(&c, &["rm", "-rf", "/data"]).await, ok(""));
        assert_eq!(run(&c, &["test", "-d", "/data"]).await.2, 1);
        assert_eq!(run(&c, &["cat", "/etc/hostname"]).await, ok("web-0\n"));
        assert_eq!(
            run(&c, &["cat", "/tmp"]).await,
            (String::new(), "cat: read error: Is a directory\n".into(), 1)
        );
    }

    #[tokio::test]
    async fn programs_and_errors() {
        let c = container();
        assert_eq!(run(&c, &["true"]).await, ok(""));
        assert_eq!(run(&c, &["false"]).await.2, 1);
        assert_eq!(run(&c, &["echo", "-n", "a", "b"]).await, ok("a b"));
        assert_eq!(run(&c, &["hostname"]).await, ok("web-0\n"));
        assert_eq!(run(&c, &["printenv", "GREETING"]).await, ok("hello world\n"));
        assert_eq!(
            run(&c, &["printenv", "NOPE", "HOME"]).await,
            ("/root\n".into(), String::new(), 1)
        );
        assert!(run(&c, &["env"]).await.0.starts_with("PATH=/bin\nHOSTNAME=web-0\n"));
        assert_eq!(run(&c, &["env", "-i", "A=1"]).await, ok("A=1\n"));
        assert_eq!(run(&c, &["env", "A=1", "printenv", "A"]).await, ok("1\n"));
        assert_eq!(run(&c, &["printf", "%s-%d\\n", "a", "1", "b", "2"]).await, ok("a-1\nb-2\n"));
        assert_eq!(run(&c, &["busybox", "echo", "hi"]).await, ok("hi\n"));
        assert_eq!(run(&c, &["[", "1", "-lt", "2", "]"]).await, ok(""));
        assert_eq!(
            run(&c, &["[", "1", "-lt", "2"]).await,
            (String::new(), "[: missing ]\n".into(), 2)
        );
        assert_eq!(run(&c, &["test", "a", "=", "b", "-o", "-d", "/tmp"]).await.2, 0);
        assert_eq!(run(&c, &["test", "x", "-eq", "1"]).await.2, 2);
        assert_eq!(
            exec(&c, &argv(&["nope"]), Stdin::Closed, None).await,
            Err(ExecError::NotFound("nope".into()))
        );
        assert_eq!(
            exec(&c, &argv(&["exit", "3"]), Stdin::Closed, None).await,
            Err(ExecError::NotFound("exit".into()))
        );
        assert_eq!(exec(&c, &[], Stdin::Closed, None).await, Err(ExecError::Empty));
        assert_eq!(
            run(&c, &["sleep", "x"]).await,
            (String::new(), "sleep: invalid number 'x'\n".into(), 1)
        );
    }

    #[tokio::test]
    async fn scripts() {
        let c = container();
        assert_eq!(sh(&c, "touch /tmp/ready && cat /tmp/ready && echo yes").await, ok("yes\n"));
        assert_eq!(sh(&c, "cat /tmp/nope || echo missing").await.0, "missing\n");
        assert_eq!(sh(&c, "false; echo $?").await, ok("1\n"));
        assert_eq!(
            sh(&c, "true && false || echo x; exit 4").await,
            ("x\n".into(), String::new(), 4)
        );
        assert_eq!(sh(&c, "false && echo no || echo yes").await, ok("yes\n"));
        assert_eq!(sh(&c, "exit 300").await.2, 44);
        assert_eq!(sh(&c, "nope").await, (String::new(), "sh: nope: not found\n".into(), 127));
        assert_eq!(
            sh(&c, "echo 'a  b' \"$GREETING\" $GREETING ${NOPE:-d} '$HOME'").await,
            ok("a  b hello world hello world d $HOME\n")
        );
        assert_eq!(sh(&c, "echo \"x\\\"y\" a\\ b # comment").await, ok("x\"y a b\n"));
        assert_eq!(sh(&c, "X=1; Y=$X$X; echo $Y; export Z=3; printenv Z").await, ok("11\n3\n"));
        assert_eq!(
            sh(&c, "V=v; printenv V; export V; printenv V; export E=; printenv E").await,
            ok("v\n\n")
        );
        assert_eq!(sh(&c, "A=5 printenv A; echo \"[$A]\"").await, ok("5\n[]\n"));
        // Redirections.
        assert_eq!(
            sh(&c, "echo one > /tmp/f; echo two >> /tmp/f; cat /tmp/f").await,
            ok("one\ntwo\n")
        );
        assert_eq!(sh(&c, "echo -n > /tmp/e; test -s /tmp/e || echo empty").await, ok("empty\n"));
        assert_eq!(sh(&c, "cat /tmp/nope 2>/dev/null; echo $?").await, ok("1\n"));
        assert_eq!(
            sh(&c, "cat /tmp/nope > /tmp/o 2>&1; cat /tmp/o").await.0,
            "cat: can't open '/tmp/nope': No such file or directory\n"
        );
        assert_eq!(sh(&c, "echo err >&2").await, (String::new(), "err\n".into(), 0));
        assert_eq!(
            sh(&c, "echo x > /nope/f").await,
            (String::new(), "sh: can't create /nope/f: nonexistent directory\n".into(), 1)
        );
        assert_eq!(sh(&c, "cat < /tmp/f").await, ok("one\ntwo\n"));
        assert_eq!(sh(&c, "> /tmp/made; test -f /tmp/made && echo made").await, ok("made\n"));
        // Pipes, globs, new lines, cd.
        assert_eq!(sh(&c, "echo hi | cat | cat > /tmp/p\ncat /tmp/p").await, ok("hi\n"));
        assert_eq!(sh(&c, "cd /tmp && ls f* && pwd").await, ok("f\n/tmp\n"));
        assert_eq!(sh(&c, "rm /tmp/*; ls /tmp").await, ok(""));
        assert_eq!(sh(&c, "! false && echo negated").await, ok("negated\n"));
        assert_eq!(sh(&c, "set -e; false; echo never").await.2, 1);
        assert_eq!(sh(&c, "[ -d /tmp ] && [ ! -f /tmp/x ]").await.2, 0);
        assert_eq!(run(&c, &["sh", "-c", "echo $0 $1 $#", "me", "a"]).await, ok("me a 1\n"));
        assert_eq!(run(&c, &["/bin/sh", "-ec", "false\necho never"]).await.2, 1);
        assert_eq!(sh(&c, "sh -c 'exit 3'; echo $?").await, ok("3\n"));
        assert_eq!(sh(&c, "bash -c \"echo nested $HOSTNAME\"").await, ok("nested web-0\n"));
        // Syntax errors.
        for bad in [
            "if true; then echo; fi",
            "echo $(date)",
            "&& x",
            "a |",
            "echo 'open",
            "(a)",
            "cat <<EOF",
        ] {
            let (out, err, code) = sh(&c, bad).await;
            assert_eq!((out.as_str(), code), ("", 2), "{bad}: {err}");
            assert!(err.starts_with("sh: syntax error"), "{bad}: {err}");
        }
        // A script on standard input.
        let (tx, rx) = mpsc::channel(4);
        tx.send(Bytes::from_static(b"echo from stdin > /tmp/s; cat /tmp/s")).await.unwrap();
        drop(tx);
        let o = exec(&c, &argv(&["sh"]), Stdin::Stream(rx), None).await.unwrap();
        assert_eq!(o.stdout, b"from stdin\n");
        // Standard input into a file.
        let (tx, rx) = mpsc::channel(4);
        tx.send(Bytes::from_static(b"piped")).await.unwrap();
        drop(tx);
        let o =
            exec(&c, &argv(&["sh", "-c", "cat > /tmp/x"]), Stdin::Stream(rx), None).await.unwrap();
        assert_eq!(o.exit_code, 0);
        assert_eq!(sh(&c, "cat /tmp/x").await, ok("piped"));
    }

    #[test]
    fn globs_match() {
        let m = |p: &str, n: &str| {
            glob_match(&p.chars().collect::<Vec<_>>(), &n.chars().collect::<Vec<_>>())
        };
        assert!(m("*", "abc") && m("a*c", "abc") && m("a?c", "abc") && m("*.ready", "x.ready"));
        assert!(!m("a*d", "abc") && !m("?", "") && !m("abc", "ab"));
        assert!(m("a*b*c", "aXbYbZc") && m("**", ""));
        // No exponential backtracking.
        let long = "a".repeat(2000);
        assert!(m(&"*a".repeat(500), &long));
        assert!(!m(&format!("{}b", "*a".repeat(200)), &long));
    }

    #[tokio::test]
    async fn streams_output() {
        let c = container();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let o =
            exec(&c, &argv(&["sh", "-c", "echo a; echo b >&2; exit 2"]), Stdin::Closed, Some(tx))
                .await
                .unwrap();
        assert_eq!((o.stdout.len(), o.stderr.len(), o.exit_code), (0, 0, 2));
        assert_eq!(rx.recv().await, Some((1, b"a\n".to_vec())));
        assert_eq!(rx.recv().await, Some((2, b"b\n".to_vec())));
    }

    #[tokio::test]
    async fn sleep_waits_and_can_be_timed_out() {
        let c = container();
        let start = std::time::Instant::now();
        assert_eq!(run(&c, &["sleep", "0.05"]).await, ok(""));
        assert!(start.elapsed() >= Duration::from_millis(50));
        assert_eq!(sh(&c, "sleep 0.01s; echo done").await, ok("done\n"));
        let forever =
            tokio::time::timeout(Duration::from_millis(50), run(&c, &["sleep", "infinity"])).await;
        assert!(forever.is_err());
        let slow =
            tokio::time::timeout(Duration::from_millis(50), sh(&c, "sleep 1d; touch /tmp/late"))
                .await;
        assert!(slow.is_err());
        assert_eq!(run(&c, &["test", "-e", "/tmp/late"]).await.2, 1);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        #[test]
        fn never_panics(script in "\\PC{0,80}", words in proptest::collection::vec("[a-z/$'\"\\\\ *?<>|&;!\\[\\]=-]{0,8}", 0..6)) {
            let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
            rt.block_on(async {
                let c = container();
                // A script that sleeps is cut short.
                let limit = Duration::from_millis(20);
                let _ = tokio::time::timeout(limit, sh(&c, &script)).await;
                let joined = words.join(" ");
                let _ = tokio::time::timeout(limit, sh(&c, &joined)).await;
                let a: Vec<&str> = words.iter().map(String::as_str).collect();
                let _ = tokio::time::timeout(limit, exec(&c, &argv(&a), Stdin::Closed, None)).await;
            });
        }
    }
}
