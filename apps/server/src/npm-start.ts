/**
 * `npm start`. npm runs a script in the folder of the package that declares it (apps/server for
 * `npm start -w @sideport/server`), and puts the folder the operator ran npm in in INIT_CWD. The
 * server works in that folder, so a relative setting (DATA_DIR's `./data` among them) means what
 * it means to `npx sideport` run there. Otherwise this is `node dist/main.js`.
 */
const operatorFolder = process.env.INIT_CWD;
if (operatorFolder) process.chdir(operatorFolder);
await import('./main.js');
