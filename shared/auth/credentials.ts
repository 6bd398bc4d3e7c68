// Username and password, checked the same way for every way in (generateToken, the sign-in page, OAuth's
// authorize page and password grant), so they share one lockout.
import { verifyPassword } from "#shared/auth/passwords.ts";
import { attemptFailed, attemptSucceeded, beginAttempt } from "#shared/stores/signin.ts";
import { getUser, type User } from "#shared/stores/users.ts";

export class SignInRefused extends Error {
  readonly reason: "locked" | "invalid" | "disabled";

  constructor(reason: "locked" | "invalid" | "disabled") {
    super(
      reason === "locked"
        ? "Too many invalid sign-in attempts. Try again later."
        : reason === "disabled"
          ? "This account has been disabled."
          : "Invalid username or password.",
    );
    this.name = "SignInRefused";
    this.reason = reason;
  }
}

/** The user these credentials name, or SignInRefused (one answer for a wrong password and an unknown user). */
export async function checkCredentials(username: string, password: string): Promise<User> {
  // No username is longer (and a longer one would not fit a DynamoDB key); nothing is counted or read for it.
  if (username.length > 128 || password.length > 1024) throw new SignInRefused("invalid");
  // Counted before the password is checked, so concurrent guesses cannot outrun the lockout.
  const attempt = await beginAttempt(username);
  if (!attempt.allowed) throw new SignInRefused("locked");
  const user = await getUser(username);
  // verifyPassword pays for one scrypt whether or not the user exists.
  const ok = await verifyPassword(password, user?.passwordHash);
  if (!ok || !user) {
    await attemptFailed(username, attempt);
    throw new SignInRefused("invalid");
  }
  await attemptSucceeded(username);
  // Said only to whoever gave the right password: a guesser learns nothing of the account from it.
  if (user.disabled) throw new SignInRefused("disabled");
  return user;
}
