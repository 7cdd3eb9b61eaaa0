import type { Mail } from '../mail/mailer.js'

// The mails that carry a one-time token, and where the token is to be sent back.

export function verificationMail (member: { email: string, name: string }, token: string): Mail {
  return {
    to: member.email,
    subject: 'Verify your email address',
    text: `Welcome, ${member.name}.\n\nTo verify your email address, POST this token to /api/v1/members/email/verify:\n\n${token}\n\nIt works once, for 7 days.\n`,
  }
}

export function passwordResetMail (member: { email: string }, token: string): Mail {
  return {
    to: member.email,
    subject: 'Reset your password',
    text: `To choose a new password, POST this token with {"token", "newPassword"} to /api/v1/members/password/reset:\n\n${token}\n\nIt works once, for 1 hour. If you did not ask for this, ignore this mail.\n`,
  }
}
