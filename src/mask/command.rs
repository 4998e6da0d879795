//! Command lines as they may be logged: each argument with its secrets
//! masked, by what the argument looks like (a URL, a header, a form, JSON),
//! by the option before it (`-u user:password`, `--password X`), and by the
//! tool it is given to where its own option names a password (`docker
//! login -p`, `mysql -pPW`, `sshpass -p`, `redis-cli -a`, curl's `-E
//! cert:password`). An argument with spaces is a shell script, or a libpq
//! connection string, as `sh -c '...'` and `psql` take them: it is read
//! word by word by the same rules, and only the words that hide something
//! change, so the script stays as written around them.

use std::borrow::Cow;
use std::ffi::OsString;
use std::ops::Range;

use super::{MASK, form, header_word, json_members, urls_within};

/// Whether an option's name says its value is a secret: `--password`,
/// `--api-token`, `--client-secret`, `--key`, `--pass`. Options naming
/// where a secret is read from (`--password-file`, `--password-stdin`) are
/// not.
fn is_secret_option(name: &str) -> bool {
    let n = name.trim_start_matches('-').to_ascii_lowercase();
    let from_elsewhere = [
        "file", "stdin", "fd", "path", "dir", "env", "cmd", "command",
    ]
    .iter()
    .any(|s| n.ends_with(s));
    !from_elsewhere
        && (n == "pass"
            || n.ends_with("-pass")
            || [
                "password",
                "passwd",
                "token",
                "secret",
                "key",
                "credential",
                "auth",
            ]
            .iter()
            .any(|w| n.contains(w)))
}

/// Options whose value is `user:password` (curl's, wget's, ...).
fn is_user_option(word: &str) -> bool {
    matches!(word, "-u" | "--user" | "--proxy-user" | "-U")
}

/// `user:password` with the password hidden (a URL, as `redis-cli -u`
/// takes, masked as a URL).
fn user_pass(v: &str) -> String {
    if v.contains("://") {
        return urls_within(v);
    }
    match v.split_once(':') {
        Some((user, pass)) if !pass.is_empty() => format!("{user}:{MASK}"),
        _ => v.to_string(),
    }
}

/// curl's `--cert FILE:PASSWORD`: the password after the first `:` that
/// no backslash escapes hidden.
fn cert_pass(v: &str) -> String {
    let bytes = v.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b':' if i + 1 < bytes.len() => return format!("{}:{MASK}", &v[..i]),
            _ => i += 1,
        }
    }
    v.to_string()
}

/// The tools whose own short options take a password.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tool {
    /// `docker login -p PW` (and podman's, helm's ...).
    Login,
    /// `mysql -pPW` (attached only: `-p` alone prompts).
    Mysql,
    /// `sshpass -p PW`.
    Sshpass,
    /// `redis-cli -a PW`.
    RedisCli,
    /// curl: `-E FILE:PW`.
    Curl,
}

impl Tool {
    /// The tool a word names (its base name), if any.
    fn named(word: &str) -> Option<Tool> {
        let base = word.rsplit('/').next().unwrap_or(word);
        Some(match base {
            "docker" | "podman" | "nerdctl" | "buildah" | "skopeo" | "helm" | "oras" => Tool::Login,
            "mysql" | "mysqldump" | "mysqladmin" | "mysqlimport" | "mysqlcheck" | "mysqlshow"
            | "mariadb" | "mariadb-dump" | "mariadb-admin" => Tool::Mysql,
            "sshpass" => Tool::Sshpass,
            "redis-cli" | "valkey-cli" | "keydb-cli" => Tool::RedisCli,
            "curl" => Tool::Curl,
            _ => return None,
        })
    }

    /// The option of this tool that takes a password as the next word.
    fn password_option(self, login: bool) -> Option<&'static str> {
        match self {
            Tool::Login if login => Some("-p"),
            Tool::Sshpass => Some("-p"),
            Tool::RedisCli => Some("-a"),
            _ => None,
        }
    }

    /// The option of this tool that takes a password attached (`-pPW`).
    fn attached_option(self, login: bool) -> Option<&'static str> {
        match self {
            Tool::Mysql => Some("-p"),
            t => t.password_option(login),
        }
    }
}

/// What the next word is, given the ones before it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Next {
    Plain,
    /// The value of `-u`: `user:password`.
    UserPass,
    /// The value of an option named like a secret.
    Secret,
    /// The value of curl's `-E`: `file:password`.
    CertPass,
}

/// The words of one command (up to a shell's `;`, `&&`, `|`...) seen so
/// far: which tool they are given to, and what the next word is.
#[derive(Clone, Copy)]
struct Context {
    tool: Option<Tool>,
    /// `login` came after the tool (`docker login`).
    login: bool,
    next: Next,
}

impl Context {
    fn new() -> Context {
        Context {
            tool: None,
            login: false,
            next: Next::Plain,
        }
    }

    /// `word` as it may be shown; `is_command`: the command itself, shown
    /// as is.
    fn mask(&mut self, word: &str, is_command: bool) -> String {
        let shown = match self.next {
            Next::UserPass => user_pass(word),
            Next::CertPass => cert_pass(word),
            Next::Secret if !word.starts_with('-') || word == "-" => MASK.to_string(),
            // A program's name is shown as it is; a COMMAND that is a whole
            // command line in one word, or a URL (mistakes the hints point
            // out), is no program's name and is masked as an argument is.
            _ if is_command
                && !word.contains(char::is_whitespace)
                && !word.contains("://")
                && !is_assignment(word) =>
            {
                word.to_string()
            }
            _ => self.argument(word),
        };
        self.next = self.after(word, is_command);
        if let Some(tool) = Tool::named(word) {
            self.tool = Some(tool);
        } else if word == "login" && self.tool.is_some() {
            self.login = true;
        }
        shown
    }

    /// What the word after `word` is.
    fn after(&self, word: &str, is_command: bool) -> Next {
        if is_command || word == "--" {
            return Next::Plain;
        }
        if is_user_option(word) {
            return Next::UserPass;
        }
        if word.starts_with("--") && !word.contains('=') && is_secret_option(word) {
            return Next::Secret;
        }
        match self.tool {
            Some(t) if t.password_option(self.login) == Some(word) => Next::Secret,
            Some(Tool::Curl) if matches!(word, "-E" | "--cert" | "--proxy-cert") => Next::CertPass,
            _ => Next::Plain,
        }
    }

    /// One argument, on its own.
    fn argument(&self, word: &str) -> String {
        // `--password=X`, `--user=u:p`, `--cert=f:p`
        if let Some(opt) = word.strip_prefix("--")
            && let Some((name, value)) = opt.split_once('=')
        {
            let value = if is_user_option(&format!("--{name}")) {
                user_pass(value)
            } else if is_secret_option(name) {
                MASK.to_string()
            } else if self.tool == Some(Tool::Curl) && matches!(name, "cert" | "proxy-cert") {
                cert_pass(value)
            } else {
                self.argument(value)
            };
            return format!("--{name}={value}");
        }
        // `-HAuthorization:...`, `-uuser:pass`: curl's attached short forms.
        if let Some(h) = word.strip_prefix("-H").and_then(header_word) {
            return format!("-H{h}");
        }
        if let Some(v) = word.strip_prefix("-u")
            && !v.is_empty()
            && v.contains(':')
        {
            return format!("-u{}", user_pass(v));
        }
        if let Some(tool) = self.tool {
            if let Some(opt) = tool.attached_option(self.login)
                && word.len() > opt.len()
                && word.starts_with(opt)
            {
                return format!("{opt}{MASK}");
            }
            if tool == Tool::Curl
                && let Some(v) = word.strip_prefix("-E")
                && !v.is_empty()
            {
                return format!("-E{}", cert_pass(v));
            }
        }
        if let Some(h) = header_word(word) {
            return h;
        }
        let trimmed = word.trim_start();
        if trimmed.starts_with(['{', '[']) {
            // A JSON body: `{"password": "x"}`.
            return json_members(word);
        }
        if word.contains(char::is_whitespace) {
            return script(word);
        }
        if word.contains("://") {
            return urls_within(word);
        }
        // `API_TOKEN=x` (env(1) style) and `a=1&password=x` (form bodies).
        if word.contains('=') && !word.starts_with('-') {
            return form(word);
        }
        if word.contains('"') {
            return json_members(word);
        }
        word.to_string()
    }
}

/// One argument of a command line as it may be logged, on its own (no
/// option or tool before it).
pub fn argument(word: &str) -> String {
    Context::new().argument(word)
}

/// Whether a word is a shell's variable assignment, `NAME=value`: a shell
/// reads it before a command (`PGPASSWORD=x psql`), exec takes it for the
/// program's name.
pub fn is_assignment(word: &str) -> bool {
    let Some((name, _)) = word.split_once('=') else {
        return false;
    };
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A command line as it may be logged: each argument shown with its secrets
/// masked. Harmless arguments come back unchanged. Assignments before the
/// program (`PGPASSWORD=x pg_isready`, which exec cannot run) are masked as
/// `env`'s arguments are, wherever they stand.
pub fn command_line(words: &[OsString]) -> Vec<String> {
    let mut context = Context::new();
    let mut is_command = true;
    words
        .iter()
        .map(|w| {
            let w = w.to_string_lossy();
            let shown = context.mask(&w, is_command);
            is_command = is_command && is_assignment(&w);
            shown
        })
        .collect()
}

/// One word of a shell script: where it stands in the text, and what the
/// shell makes of it (quotes and escapes removed). An operator (`;`, `&&`,
/// `|`, a newline...) ends a command.
struct Word {
    span: Range<usize>,
    value: String,
    operator: bool,
}

/// The words of a shell script, as far as masking needs: quotes (`'...'`,
/// `"..."` with its backslash escapes), backslashes, blanks and operators.
/// Anything else (expansions, comments) is part of a word.
fn shell_words(s: &str) -> Vec<Word> {
    let mut words = Vec::new();
    let mut chars = s.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        if c == '\n' || c == ';' || c == '&' || c == '|' || c == '(' || c == ')' {
            let mut end = start;
            while let Some(&(i, c)) = chars.peek() {
                if !matches!(c, '\n' | ';' | '&' | '|' | '(' | ')') {
                    break;
                }
                end = i + c.len_utf8();
                chars.next();
            }
            words.push(Word {
                span: start..end,
                value: s[start..end].to_string(),
                operator: true,
            });
            continue;
        }
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let mut value = String::new();
        let mut end = start;
        let mut quote = None;
        while let Some(&(i, c)) = chars.peek() {
            match (quote, c) {
                (None, c) if c.is_whitespace() || matches!(c, ';' | '&' | '|' | '(' | ')') => {
                    break;
                }
                (None, '\'' | '"') => quote = Some(c),
                (Some(q), c) if c == q => quote = None,
                (None, '\\') | (Some('"'), '\\') => {
                    chars.next();
                    end = i + 1;
                    if let Some(&(j, next)) = chars.peek() {
                        if quote.is_some() && !matches!(next, '"' | '\\' | '$' | '`') {
                            value.push('\\');
                        }
                        value.push(next);
                        end = j + next.len_utf8();
                        chars.next();
                    }
                    continue;
                }
                (_, c) => value.push(c),
            }
            end = i + c.len_utf8();
            chars.next();
        }
        words.push(Word {
            span: start..end,
            value,
            operator: false,
        });
    }
    words
}

/// A shell script (or any text of several words) with each word masked as
/// an argument is, one command at a time; a changed word is written back
/// quoted, the rest of the text as it was.
fn script(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut at = 0;
    let mut context = Context::new();
    for word in shell_words(s) {
        if word.operator {
            context = Context::new();
            continue;
        }
        // The command of each part is an argument here: in a script it may
        // be `PGPASSWORD=x`, or a URL.
        let shown = context.mask(&word.value, false);
        if shown != word.value {
            out.push_str(&s[at..word.span.start]);
            out.push_str(&quoted(&shown));
            at = word.span.end;
        }
    }
    out.push_str(&s[at..]);
    out
}

/// A masked word written back into a script: quoted where the shell needs
/// it.
fn quoted(word: &str) -> Cow<'_, str> {
    shlex::try_quote(word).unwrap_or(Cow::Borrowed(word))
}

#[cfg(test)]
mod tests;
