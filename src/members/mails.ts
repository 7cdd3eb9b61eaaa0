import type { Mail } from '../mail/mailer.js'

// The mails that carry a one-time token, and where the token is to be sent back. They hold no text
// a member chose (a name): whoever registers may give someone else's address, and a name placed
// before our own words could pass for them (CONTRACT §11). The token is the only line of its own.

export function verificationMail (member: { email: string }, token: string): Mail {
  return {
    to: member.email,
    subject: 'Verify your email address',
    text: `An account was registered with this email address. To verify the address, POST this token to /api/v1/members/email/verify:\n\n${token}\n\nIt works once, for 7 days. If you did not register, ignore this mail.\n`,
  }
}

export function passwordResetMail (member: { email: string }, token: string): Mail {
  return {
    to: member.email,
    subject: 'Reset your password',
    text: `To choose a new password, POST this token with {"token", "newPassword"} to /api/v1/members/password/reset:\n\n${token}\n\nIt works once, for 1 hour. If you did not ask for this, ignore this mail.\n`,
  }
}
