/**
 * The Node ceiling: a bare node:http server answering one fixed JSON body (the health envelope) to
 * every request. Spawned by bench/ceilings.ts as its own process; listens on 127.0.0.1:$PORT.
 */
import http from 'node:http'

const body = Buffer.from(JSON.stringify({ success: true, data: { status: 'UP' }, error: null }))
const server = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length })
  res.end(body)
})
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  process.stdout.write('listening\n')
})
process.on('SIGTERM', () => server.close(() => process.exit(0)))
