/** An admin command that cannot be carried out as asked; the message is for the operator as is. */
export class AdminError extends Error {
  override readonly name = 'AdminError';
}
