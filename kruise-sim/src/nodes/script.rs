//! How a simulated container ends, read from its `command` and `args`.
//!
//! The simulated kubelet runs no programs, so it reads what a container's command would do
//! the way a user reads it:
//!
//! | command and args | the container |
//! |---|---|
//! | `sleep 30` | runs 30 s, then exits 0 (`s`, `m`, `h`, `d` suffixes; `sleep infinity` never ends) |
//! | `exit 3` | exits 3 at once |
//! | `true`, `:`, `echo hi`, `date`, `printf`, `env`, `ls`, ... | exit 0 at once |
//! | `false` | exits 1 at once |
//! | `sh -c "sleep 5; exit 1"` | a shell script of these, joined by `;`, `&&`, `\|\|` or new lines |
//! | anything else (`nginx`, `python app.py`, no command) | see below |
//!
//! A command it does not know is a program it cannot judge. In a pod whose `restartPolicy`
//! is `Always` (a server's pod) it runs until stopped; in a pod with `OnFailure` or `Never`
//! (a Job's pod) it runs for [`super::kubelet::Delays::run`] and exits 0. A regular init
//! container without a known command likewise completes after `init_run`, and a native
//! sidecar runs until stopped.

use std::time::Duration;

/// How a container's process ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// It runs until the kubelet stops it.
    Never,
    /// It exits with `code` after running for `after`.
    After {
        /// How long it runs.
        after: Duration,
        /// Its exit code.
        code: i32,
    },
}

/// Shells whose `-c` script is read.
const SHELLS: &[&str] = &["sh", "bash", "ash", "dash", "zsh", "ksh", "busybox"];

/// Commands that finish at once with status 0.
const QUICK: &[&str] = &[
    "true", ":", "echo", "printf", "date", "env", "printenv", "ls", "cat", "pwd", "id", "whoami",
    "hostname", "uname", "touch", "mkdir", "rm", "cp", "mv", "ln", "chmod", "chown", "export",
    "cd", "set", "test", "[", "nslookup", "wc", "head", "grep", "sync",
];

/// How a container with this `command` and `args` ends. `unknown` is what a command the
/// reader does not know does (see the module documentation).
pub fn ending(command: &[String], args: &[String], unknown: Ending) -> Ending {
    let argv: Vec<&str> = command.iter().chain(args).map(String::as_str).collect();
    let Some(first) = argv.first() else { return unknown };
    let program = first.rsplit('/').next().unwrap_or(first);
    let script = if SHELLS.contains(&program) {
        // `sh -c SCRIPT`, `sh -ec SCRIPT`, `busybox sh -c SCRIPT`.
        let rest = if program == "busybox" && argv.get(1).is_some_and(|a| SHELLS.contains(a)) {
            &argv[2..]
        } else {
            &argv[1..]
        };
        match rest.iter().position(|a| a.starts_with('-') && a.contains('c')) {
            Some(i) => match rest.get(i + 1) {
                Some(script) => tokenize(script),
                None => return unknown,
            },
            // A shell running a file: a program it cannot read.
            None if program == "busybox" && !rest.is_empty() => {
                argv[1..].iter().map(|s| Token::Word(s.to_string())).collect()
            }
            None => return unknown,
        }
    } else {
        argv.iter().map(|s| Token::Word(s.to_string())).collect()
    };
    run(&script, unknown)
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Word(String),
    /// `;`, `&`, `|` or a new line: the next command runs whatever the last one returned.
    Then,
    /// `&&`.
    And,
    /// `||`.
    Or,
}

/// Splits a shell script into words and separators; quotes group words, `#` starts a comment.
fn tokenize(script: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = script.chars().peekable();
    let flush = |word: &mut String, in_word: &mut bool, out: &mut Vec<Token>| {
        if *in_word {
            out.push(Token::Word(std::mem::take(word)));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == c {
                        break;
                    }
                    word.push(q);
                }
            }
            '#' if !in_word => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        break;
                    }
                }
                flush(&mut word, &mut in_word, &mut out);
                out.push(Token::Then);
            }
            ';' | '\n' => {
                flush(&mut word, &mut in_word, &mut out);
                out.push(Token::Then);
            }
            '&' | '|' => {
                flush(&mut word, &mut in_word, &mut out);
                if chars.peek() == Some(&c) {
                    chars.next();
                    out.push(if c == '&' { Token::And } else { Token::Or });
                } else {
                    out.push(Token::Then);
                }
            }
            c if c.is_whitespace() => flush(&mut word, &mut in_word, &mut out),
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    flush(&mut word, &mut in_word, &mut out);
    out
}

/// What one simple command does.
enum Step {
    /// Takes this long and returns this status.
    Takes(Duration, i32),
    /// Never returns.
    Forever,
    /// Ends the script with this code.
    Exit(i32),
    /// A program the reader does not know.
    Unknown,
}

fn step(words: &[String], status: i32) -> Step {
    let Some(first) = words.first() else { return Step::Takes(Duration::ZERO, status) };
    let program = first.rsplit('/').next().unwrap_or(first);
    match program {
        "sleep" => {
            let mut total = Duration::ZERO;
            for arg in &words[1..] {
                if arg == "infinity" || arg == "inf" {
                    return Step::Forever;
                }
                match parse_interval(arg) {
                    Some(d) => total += d,
                    // sleep: invalid time interval
                    None => return Step::Takes(Duration::ZERO, 1),
                }
            }
            Step::Takes(total, 0)
        }
        "exit" => {
            let code = match words.get(1) {
                None => status,
                // The shell keeps the low 8 bits.
                Some(n) => n.parse::<i64>().map(|n| n.rem_euclid(256) as i32).unwrap_or(2),
            };
            Step::Exit(code)
        }
        "false" => Step::Takes(Duration::ZERO, 1),
        p if QUICK.contains(&p) => Step::Takes(Duration::ZERO, 0),
        _ => Step::Unknown,
    }
}

/// `sleep`'s argument: a number of seconds with an optional `s`, `m`, `h` or `d`.
fn parse_interval(arg: &str) -> Option<Duration> {
    let (number, unit) = match arg.char_indices().last()? {
        (i, c @ ('s' | 'm' | 'h' | 'd')) => (&arg[..i], c),
        _ => (arg, 's'),
    };
    let n: f64 = number.parse().ok().filter(|n: &f64| n.is_finite() && *n >= 0.0)?;
    let scale = match unit {
        'm' => 60.0,
        'h' => 3600.0,
        'd' => 86400.0,
        _ => 1.0,
    };
    Duration::try_from_secs_f64(n * scale).ok()
}

/// Runs the script's commands in order, as a shell would.
fn run(tokens: &[Token], unknown: Ending) -> Ending {
    let mut elapsed = Duration::ZERO;
    let mut status = 0;
    let mut skip = false;
    let mut words: Vec<String> = Vec::new();
    let mut tokens = tokens.iter().peekable();
    loop {
        let token = tokens.next();
        match token {
            Some(Token::Word(w)) => {
                words.push(w.clone());
                continue;
            }
            Some(Token::Then | Token::And | Token::Or) | None => {}
        }
        if !skip && !words.is_empty() {
            match step(&words, status) {
                Step::Takes(d, s) => {
                    elapsed += d;
                    status = s;
                }
                Step::Forever => return Ending::Never,
                Step::Exit(code) => return Ending::After { after: elapsed, code },
                Step::Unknown => match unknown {
                    Ending::Never => return Ending::Never,
                    Ending::After { after, code } => {
                        elapsed += after;
                        status = code;
                    }
                },
            }
        }
        words.clear();
        skip = match token {
            Some(Token::And) => status != 0,
            Some(Token::Or) => status == 0,
            _ => false,
        };
        if token.is_none() {
            return Ending::After { after: elapsed, code: status };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(argv: &[&str]) -> Ending {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        ending(&argv, &[], Ending::Never)
    }

    fn after(secs: f64, code: i32) -> Ending {
        Ending::After { after: Duration::from_secs_f64(secs), code }
    }

    #[test]
    fn plain_commands() {
        assert_eq!(of(&["sleep", "5"]), after(5.0, 0));
        assert_eq!(of(&["/bin/sleep", "1.5", "2m"]), after(121.5, 0));
        assert_eq!(of(&["sleep", "infinity"]), Ending::Never);
        assert_eq!(of(&["sleep", "soon"]), after(0.0, 1));
        assert_eq!(of(&["true"]), after(0.0, 0));
        assert_eq!(of(&["false"]), after(0.0, 1));
        assert_eq!(of(&["echo", "hello"]), after(0.0, 0));
        assert_eq!(of(&["nginx", "-g", "daemon off;"]), Ending::Never);
        assert_eq!(of(&[]), Ending::Never);
    }

    #[test]
    fn shell_scripts() {
        assert_eq!(of(&["sh", "-c", "sleep 5; exit 1"]), after(5.0, 1));
        assert_eq!(of(&["/bin/bash", "-ec", "echo 'a; b' && sleep 2 && exit 7"]), after(2.0, 7));
        assert_eq!(of(&["sh", "-c", "false && sleep 9"]), after(0.0, 1));
        assert_eq!(of(&["sh", "-c", "false || sleep 9"]), after(9.0, 0));
        assert_eq!(of(&["sh", "-c", "sleep 1\nfalse"]), after(1.0, 1));
        assert_eq!(of(&["sh", "-c", "false; exit"]), after(0.0, 1));
        assert_eq!(of(&["sh", "-c", "exit 257"]), after(0.0, 1));
        assert_eq!(of(&["sh", "-c", "exit -1"]), after(0.0, 255));
        assert_eq!(of(&["sh", "-c", "sleep 1 # then exit 3\nexit 4"]), after(1.0, 4));
        assert_eq!(of(&["sh", "-c", "sleep 3 &"]), after(3.0, 0));
        assert_eq!(of(&["busybox", "sh", "-c", "exit 2"]), after(0.0, 2));
        assert_eq!(of(&["busybox", "sleep", "2"]), after(2.0, 0));
        assert_eq!(of(&["sh", "script.sh"]), Ending::Never);
        assert_eq!(of(&["sh", "-c"]), Ending::Never);
    }

    #[test]
    fn unknown_programs_do_what_the_pod_kind_suggests() {
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let job = Ending::After { after: Duration::from_secs(1), code: 0 };
        assert_eq!(ending(&argv(&["perl", "-wle", "print 1"]), &[], job), after(1.0, 0));
        assert_eq!(
            ending(&argv(&["sh", "-c"]), &argv(&["python x.py; exit 3"]), job),
            after(1.0, 3)
        );
        assert_eq!(
            ending(&argv(&["sh", "-c", "sleep 2; ./serve"]), &[], Ending::Never),
            Ending::Never
        );
        assert_eq!(ending(&[], &[], job), job);
    }

    #[test]
    fn arbitrary_input_never_panics() {
        for s in [
            "",
            "'",
            "\"unterminated",
            "&&&",
            "||;|",
            "exit 99999999999999999999",
            "sleep -1",
            "sleep 1e308",
            "sleep NaN",
        ] {
            let _ = of(&["sh", "-c", s]);
            let _ = of(&["sleep", s]);
        }
    }
}
